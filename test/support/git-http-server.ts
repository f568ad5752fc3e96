import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the server saw. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  headers: IncomingHttpHeaders;
}

export interface GitHttpServerOptions {
  /** Directory of bare repositories (GIT_PROJECT_ROOT). */
  root: string;
  /** When set, every request must carry `Authorization: Basic base64("x-access-token:<token>")`. */
  token?: string;
}

/**
 * A real smart-HTTP git server on 127.0.0.1 (random port): each request runs
 * `git http-backend` as a CGI program. Records every request; `hold` can make it
 * never answer chosen requests (to keep a client busy for abort/timeout tests).
 */
export class GitHttpServer {
  readonly requests: RecordedRequest[] = [];
  /** Requests for which this returns true are never answered (until close). */
  hold: (request: RecordedRequest) => boolean = () => false;
  /** Called when a request is held. */
  onHold: (request: RecordedRequest) => void = () => undefined;
  /** Milliseconds to wait before answering a request (to keep a client busy for a while). */
  delayMs: (request: RecordedRequest) => number = () => 0;
  /**
   * Redirect mode: a Location for requests that should be answered with a 302
   * (before any token check, as a moved repository's host answers), undefined
   * to serve them. `redirectTo` builds the common one.
   */
  redirect: (request: RecordedRequest) => string | undefined = () => undefined;
  private readonly children = new Set<ChildProcess>();
  private readonly held = new Set<ServerResponse>();

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(options: GitHttpServerOptions): Promise<GitHttpServer> {
    let instance: GitHttpServer | undefined;
    const server = createServer((req, res) => instance?.handle(options, req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    instance = new GitHttpServer(server, (server.address() as AddressInfo).port);
    return instance;
  }

  /** The clone URL of `<root>/<repo>`. */
  url(repo: string): string {
    return `http://127.0.0.1:${this.port}/${repo}`;
  }

  /** Redirects every request under `/<from>/` to `<origin>/<to>/…` (same rest of path and query). */
  redirectTo(from: string, origin: string, to: string, when: (request: RecordedRequest) => boolean = () => true): void {
    this.redirect = (request) =>
      request.path.startsWith(`/${from}/`) && when(request)
        ? `${origin}/${to}/${request.path.slice(from.length + 2)}${request.query ? `?${request.query}` : ''}`
        : undefined;
  }

  /** Requests that transfer data or list refs (`POST …/git-upload-pack`). */
  uploadPackPosts(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/git-upload-pack'));
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    for (const child of this.children) child.kill('SIGKILL');
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(options: GitHttpServerOptions, req: import('node:http').IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), headers: req.headers };
    this.requests.push(record);
    const location = this.redirect(record);
    if (location !== undefined) {
      res.writeHead(302, { Location: location }).end();
      req.resume();
      return;
    }
    if (options.token !== undefined) {
      const expected = `Basic ${Buffer.from(`x-access-token:${options.token}`).toString('base64')}`;
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="forgesync-test"' }).end('unauthorized\n');
        req.resume();
        return;
      }
    }
    if (this.hold(record)) {
      this.held.add(res);
      req.resume();
      this.onHold(record);
      return;
    }
    const delay = this.delayMs(record);
    if (delay > 0) setTimeout(() => this.serve(options, req, res, record, url), delay);
    else this.serve(options, req, res, record, url);
  }

  private serve(options: GitHttpServerOptions, req: import('node:http').IncomingMessage, res: ServerResponse, record: RecordedRequest, url: URL): void {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: '/nonexistent',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: options.root,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
      REQUEST_METHOD: record.method,
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: record.query,
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') env[`HTTP_${name.toUpperCase().replace(/-/g, '_')}`] = value;
    }
    const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    this.children.add(child);
    child.on('close', () => this.children.delete(child));
    child.stdin.on('error', () => undefined);
    req.pipe(child.stdin);
    relayCgi(child, res);
  }
}

/** Parses the CGI header block from the child's stdout and streams the body. */
function relayCgi(child: ChildProcess, res: ServerResponse): void {
  let head = Buffer.alloc(0);
  let headersSent = false;
  child.stdout?.on('data', (chunk: Buffer) => {
    if (headersSent) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const end = crlf !== -1 && (lf === -1 || crlf < lf) ? crlf : lf;
    if (end === -1) return;
    const separator = end === crlf ? 4 : 2;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon === -1) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 200;
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    headersSent = true;
    const rest = head.subarray(end + separator);
    if (rest.length > 0) res.write(rest);
  });
  child.on('close', () => {
    if (!headersSent) res.writeHead(502).end('http-backend produced no headers\n');
    else res.end();
  });
}
