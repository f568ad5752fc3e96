// A local OTLP/HTTP trace receiver for the benches' "tracing on" runs: a child
// process (so its work is not counted as forgesync's) accepting
// `POST /v1/traces` (forgesync's exporter sends OTLP JSON), counting the spans
// and answering 200 as a collector would; `GET /count` reports the counts.
import { spawn } from 'node:child_process';

const SERVER = `
const http = require('node:http');
let spans = 0, requests = 0, bytes = 0;
const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.method === 'GET' && request.url === '/count') return response.end(JSON.stringify({ spans, requests, bytes }));
    const body = Buffer.concat(chunks);
    requests++;
    bytes += body.length;
    try {
      for (const resource of JSON.parse(body).resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) spans += (scope.spans ?? []).length;
    } catch {}
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
`;

/** Starts the receiver; resolves with its endpoint (for OTEL_EXPORTER_OTLP_ENDPOINT), a count() of what it got, and stop(). */
export function startOtlpReceiver() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buffer = '';
    child.once('error', reject);
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline === -1) return;
      const endpoint = `http://127.0.0.1:${JSON.parse(buffer.slice(0, newline)).port}`;
      resolve({
        endpoint,
        child,
        count: async () => (await fetch(`${endpoint}/count`)).json(),
        stop: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGTERM')))),
      });
    });
  });
}
