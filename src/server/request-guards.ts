import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';

/** Paths probes and scrapers reach by address (a pod's IP, a load balancer's name): no Host check. */
const UNCHECKED_PATHS = new Set(['/livez', '/readyz', '/metrics']);
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The host names a server answers to by default: loopback, this machine's name, and the address it binds. */
export function defaultAllowedHosts(bindHost?: string): string[] {
  const hosts = ['localhost', '127.0.0.1', '::1', hostname().toLowerCase()];
  if (bindHost && bindHost !== '0.0.0.0' && bindHost !== '::') hosts.push(bindHost.toLowerCase());
  return hosts;
}

/** The host name of a `Host` header or an origin's authority, lower case, without port or brackets. */
function hostName(authority: string | undefined): string | undefined {
  if (!authority) return undefined;
  const text = authority.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1];
  return /^([^:]+)(?::\d+)?$/.exec(text)?.[1];
}

/**
 * What a request must show before any route sees it, whatever its token:
 *  - a `Host` (from a trusted proxy, its `X-Forwarded-Host`) the server answers
 *    to (`allowedHosts`): a page on another name that resolves to this server
 *    (DNS rebinding) gets 421;
 *  - for a state change under /api: JSON (`Content-Type: application/json`, which
 *    no form or `text/plain` request another page can send without a CORS
 *    preflight may carry) and, when the browser says where it comes from, an
 *    `Origin` on one of those hosts: 415 / 403 otherwise.
 * Webhooks keep their own content types: they are authenticated by signature.
 */
export function guardRequests(server: FastifyInstance, allowedHosts: readonly string[]): void {
  const allowed = new Set(allowedHosts.map((host) => hostName(host) ?? host));
  server.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0]!;
    if (UNCHECKED_PATHS.has(path)) return;
    // request.host: `Host`, or `X-Forwarded-Host` from a proxy FORGESYNC_TRUST_PROXY names (which may have set Host to its upstream's).
    const host = hostName(request.host);
    if (!host || !allowed.has(host)) {
      return reply.code(421).send({
        error: 'misdirected',
        message: `this server does not answer to the host name in the request; the operator lists the names it answers to in FORGESYNC_ALLOWED_HOSTS`,
      });
    }
    if (!STATE_CHANGING.has(request.method) || !path.startsWith('/api/')) return;
    const origin = request.headers.origin;
    if (origin !== undefined) {
      let originHost: string | undefined;
      try {
        const parsed = new URL(origin);
        originHost = parsed.protocol === 'http:' || parsed.protocol === 'https:' ? hostName(parsed.host) : undefined;
      } catch {
        originHost = undefined;
      }
      if (!originHost || !allowed.has(originHost)) {
        return reply.code(403).send({ error: 'forbidden', message: 'state changes from another site are refused' });
      }
    }
    const type = String(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      return reply.code(415).send({ error: 'unsupported_media_type', message: 'state-changing API requests must be sent as Content-Type: application/json (an empty body is fine)' });
    }
  });
  // Actions without a body (sync, resync, release) still say application/json: an empty body is no error.
  const parseJson = server.getDefaultJsonParser('error', 'error');
  server.removeContentTypeParser('application/json');
  server.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') return done(null, undefined);
    parseJson(request, text, done);
  });
}
