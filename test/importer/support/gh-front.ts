import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeTestCertificates } from './test-tls.js';

/*
 * The gh CLI (2.23, Debian's) treats any GH_HOST as a GitHub Enterprise host
 * and reaches it over https only, at `https://<host>/api/v3/<rest path>` and
 * `https://<host>/api/graphql`. This front is that host: a TLS listener on
 * 127.0.0.1 (a certificate from a CA made for this run; gh is told to trust
 * it through SSL_CERT_FILE) that passes each request on, streamed both ways,
 * to a plain-HTTP upstream:
 *   /api/v3/<rest>  → `<restBase>/<rest>` (the copy's `<origin>/github`, or the fake GitHub's `<origin>/api/v3`)
 *   /api/graphql    → `graphqlUrl` (the copy's `<origin>/github/api/graphql`; the fake GitHub has none: 404)
 * The upstream sees its own Host (so the copy's Host check and links hold);
 * `Link` headers are moved from the upstream's REST base to the front's, so
 * `gh api --paginate` keeps coming back through the front. Bodies pass untouched.
 */

export interface GhFrontUpstream {
  /** Where `/api/v3/<rest>` goes: `<restBase>/<rest>`, no trailing slash. */
  restBase: string;
  /** Where `/api/graphql` goes; absent: the front answers GitHub's 404 itself. */
  graphqlUrl?: string;
}

export interface GhFront {
  /** `127.0.0.1:<port>`: the GH_HOST for gh. */
  host: string;
  /** The CA certificate file to hand gh as SSL_CERT_FILE. */
  caFile: string;
  /** Stops the listener and deletes the certificates. */
  close(): Promise<void>;
}

/** The upstream URL for a path the front received, or undefined when the front serves no such path. */
function upstreamUrl(path: string, upstream: GhFrontUpstream): string | undefined {
  const [pathname, query] = splitQuery(path);
  if (pathname === '/api/graphql') return upstream.graphqlUrl === undefined ? undefined : upstream.graphqlUrl + query;
  if (pathname === '/api/v3' || pathname.startsWith('/api/v3/')) return upstream.restBase + pathname.slice('/api/v3'.length) + query;
  return undefined;
}

function splitQuery(path: string): [string, string] {
  const at = path.indexOf('?');
  return at === -1 ? [path, ''] : [path.slice(0, at), path.slice(at)];
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ message: 'Not Found', documentation_url: 'https://docs.github.com/rest' }));
}

/** Passes one request on to `target` and its answer back (headers copied, bodies streamed). */
function forward(req: IncomingMessage, res: ServerResponse, target: URL, moveLinks: (link: string) => string): void {
  const headers = { ...req.headers, host: target.host };
  const outgoing = httpRequest(target, { method: req.method, headers }, (answer) => {
    const answerHeaders = { ...answer.headers };
    if (typeof answerHeaders.link === 'string') answerHeaders.link = moveLinks(answerHeaders.link);
    res.writeHead(answer.statusCode ?? 502, answerHeaders);
    answer.pipe(res);
  });
  outgoing.on('error', (error) => {
    if (res.headersSent) res.destroy(error);
    else res.writeHead(502, { 'content-type': 'text/plain' }).end(`the gh front could not reach ${target.origin}: ${error.message}`);
  });
  req.pipe(outgoing);
}

/**
 * Starts the front for `upstream` on 127.0.0.1 with a fresh CA and
 * certificate (one front per upstream: the copy's, the fake's). Returns the
 * host for GH_HOST and the CA file.
 */
export async function startGhFront(upstream: GhFrontUpstream): Promise<GhFront> {
  const certificates = await makeTestCertificates();
  let frontRestBase = '';
  const server = createHttpsServer({ cert: certificates.cert, key: certificates.key }, (req, res) => {
    const target = upstreamUrl(req.url ?? '/', upstream);
    if (target === undefined) {
      req.resume();
      notFound(res);
      return;
    }
    forward(req, res, new URL(target), (link) => link.split(upstream.restBase).join(frontRestBase));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  frontRestBase = `https://${host}/api/v3`;
  return {
    host,
    caFile: certificates.caFile,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      certificates.remove();
    },
  };
}
