// A local OTLP/HTTP trace receiver for the benches' "tracing on" runs: a child
// process (so its work is not counted as forgesync's) accepting
// `POST /v1/traces` in OTLP's protobuf encoding (forgesync's default) or JSON,
// counting the spans and answering 200 as a collector would; `GET /count`
// reports the counts.
import { spawn } from 'node:child_process';

const SERVER = `
const http = require('node:http');
let spans = 0, requests = 0, bytes = 0;
// The length-delimited fields numbered n of a protobuf message (varint, fixed64 and fixed32 fields skipped).
function* embedded(buffer, n) {
  let at = 0;
  const varint = () => { let value = 0, shift = 0, byte; do { byte = buffer[at++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80); return value; };
  while (at < buffer.length) {
    const key = varint(), type = key & 7;
    if (type === 0) varint();
    else if (type === 1) at += 8;
    else if (type === 5) at += 4;
    else { const length = varint(); if (key >>> 3 === n) yield buffer.subarray(at, at + length); at += length; }
  }
}
// ExportTraceServiceRequest: resource_spans 1 › scope_spans 2 › spans 2.
const protobufSpans = (body) => { let n = 0; for (const r of embedded(body, 1)) for (const s of embedded(r, 2)) for (const _ of embedded(s, 2)) n++; return n; };
const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.method === 'GET' && request.url === '/count') return response.end(JSON.stringify({ spans, requests, bytes }));
    const body = Buffer.concat(chunks);
    requests++;
    bytes += body.length;
    if (String(request.headers['content-type']).startsWith('application/x-protobuf')) {
      spans += protobufSpans(body);
      return response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    }
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
