// The reference server of bench/serve.mjs: `git http-backend` (git's own smart
// HTTP CGI) behind a minimal Node HTTP server, one CGI process per request as
// a web server would run it. Run as a child process (`node serve-http-backend.mjs
// <project-root>`, printing `{"port":N}` on stdout) so that its CPU tree can be
// read from /proc like forgesync's; `cgiHandler` is also used in-process by the
// bench's LFS upstream to serve git.
//
// Fairness: the CGI gets exactly the server settings forgesync passes its
// upload-pack (uploadpack.allowFilter, uploadpack.allowReachableSHA1InWant),
// as GIT_CONFIG_* environment (http-backend hands its environment to
// upload-pack), with system and global config disabled; its stdout is piped to
// the response with backpressure after the CGI header block, and its stdin is
// the request body as it arrives (git decompresses gzip bodies itself).
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

const SERVER_CONFIG = [
  ['uploadpack.allowFilter', 'true'],
  ['uploadpack.allowReachableSHA1InWant', 'true'],
];

/** The CGI environment of one request. */
function cgiEnv(projectRoot, req, url) {
  const env = {
    PATH: process.env.PATH,
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_COUNT: String(SERVER_CONFIG.length),
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  };
  SERVER_CONFIG.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  // HTTP_GIT_PROTOCOL (protocol v2), HTTP_CONTENT_ENCODING (gzip bodies) and the rest.
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') env[`HTTP_${name.toUpperCase().replace(/-/g, '_')}`] = value;
  }
  return env;
}

/**
 * Answers one request with `git http-backend` on `projectRoot`: the CGI
 * header block parsed (Status: and the headers), the rest of its stdout piped.
 * The child is killed when the client goes away.
 */
export function cgiHandler(projectRoot) {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const child = spawn('git', ['http-backend'], { env: cgiEnv(projectRoot, req, url), stdio: ['pipe', 'pipe', 'ignore'] });
    child.stdin.on('error', () => {});
    req.pipe(child.stdin);
    res.once('close', () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let head = Buffer.alloc(0);
    const onHead = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const crlf = head.indexOf('\r\n\r\n');
      const lf = head.indexOf('\n\n');
      const end = crlf !== -1 && (lf === -1 || crlf < lf) ? crlf : lf;
      if (end === -1) return;
      child.stdout.off('data', onHead);
      child.stdout.pause();
      let status = 200;
      const headers = {};
      for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon === -1) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 200;
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      const rest = head.subarray(end + (end === crlf ? 4 : 2));
      if (rest.length > 0) res.write(rest);
      child.stdout.pipe(res);
    };
    child.stdout.on('data', onHead);
    child.once('close', () => {
      if (!res.headersSent) res.writeHead(502).end('http-backend produced no headers\n');
    });
  };
}

/** Starts the server in this process on 127.0.0.1 (random port); resolves with it and its port. */
export async function listenCgi(projectRoot) {
  const server = createServer(cgiHandler(projectRoot));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: server.address().port };
}

/** Starts the server as a child process; resolves with the child and its base URL. */
export function startHttpBackend(projectRoot) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), projectRoot], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buffer = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline !== -1) resolve({ child, url: `http://127.0.0.1:${JSON.parse(buffer.slice(0, newline)).port}` });
    });
    child.once('exit', (code) => reject(new Error(`the http-backend server exited with ${code}`)));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { port } = await listenCgi(process.argv[2]);
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}
