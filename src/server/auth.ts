import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ScopedReader } from '../credentials/readers.js';

/** What a caller may do: read, or read and change. */
export type Role = 'read' | 'admin';

/**
 * What a route lets in: `admin`; `read` (the read and admin tokens, which
 * see every name); `scoped-read` (those and the scoped readers: the route
 * itself answers only what {@link inScope} lets the caller see).
 */
export type Requirement = Role | 'scoped-read';

export interface AuthTokens {
  /** Always set for a running server (`serve` generates one when none is configured). */
  admin: string | undefined;
  /** The unscoped reader (FORGESYNC_READ_TOKEN). */
  read: string | undefined;
  /** The scoped readers now defined (the secrets file, read again when it changes); asked only for a token that is neither of the above. */
  readers?: () => Promise<readonly ScopedReader[]>;
  /** Counts failed attempts per client address and per token presented; set by the server. */
  failures?: AuthFailures;
}

/** What an authenticated request may do: its role and, for a scoped reader, which names it sees (absent: every name). */
export interface Access {
  role: Role;
  sees?: (name: string) => boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the request is authenticated. */
    access?: Access;
  }
}

/**
 * Whether the caller may see the source or import `name`. A name outside a
 * scoped reader's scope is answered as unknown (404), never 403, so that a
 * reader cannot learn which names exist outside its scope.
 */
export function inScope(request: FastifyRequest, name: string): boolean {
  return request.access?.sees?.(name) ?? true;
}

/** Compares secrets in constant time (hashing first so lengths do not leak either). */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The token of a request: `Authorization: Bearer <token>`, or `token <token>`
 * (what Octokit sends). A header only: the dashboard keeps the token in
 * session storage and sends it itself, so there is no ambient cookie for a
 * cross-site request to ride on.
 */
function tokenOf(request: FastifyRequest, schemes: TokenSchemes = {}): string | undefined {
  const header = request.headers.authorization ?? '';
  const bearer = /^(?:Bearer|token)\s+(\S+)$/i.exec(header)?.[1];
  if (bearer || !schemes.basic) return bearer;
  // Basic: the token is the password, whatever the user name (what git and its credential helpers send).
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header)?.[1];
  if (!basic) return undefined;
  const decoded = Buffer.from(basic, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 || colon === decoded.length - 1 ? undefined : decoded.slice(colon + 1);
}

/**
 * Which Authorization schemes carry the token besides Bearer: HTTP Basic
 * only where a non-browser client needs it (git's smart HTTP). Never on the
 * API: a browser that was once given Basic credentials sends them with
 * every request to the origin, which a cross-site page could ride on.
 */
export interface TokenSchemes {
  basic?: boolean;
}

/**
 * What a token grants, or null. There is no open mode: no token, no access.
 * Every reader's token is compared (in constant time each), whichever
 * matches, so the time taken does not tell how many readers there are or
 * which one matched.
 */
async function accessOf(request: FastifyRequest, tokens: AuthTokens, schemes: TokenSchemes): Promise<Access | null> {
  const given = tokenOf(request, schemes);
  if (!given) return null;
  if (tokens.admin && safeEqual(given, tokens.admin)) return { role: 'admin' };
  if (tokens.read && safeEqual(given, tokens.read)) return { role: 'read' };
  let found: ScopedReader | undefined;
  for (const reader of tokens.readers ? await tokens.readers() : []) {
    if (safeEqual(given, reader.token)) found ??= reader;
  }
  return found ? { role: 'read', sees: found.sees } : null;
}

/**
 * A stable, non-secret identifier of the token a request carries (the first
 * 16 hex digits of its SHA-256), so that what one caller made (a snapshot
 * hold) can be told from what another made; null without a token.
 */
export function callerOf(request: FastifyRequest): string | null {
  const given = tokenOf(request);
  return given ? createHash('sha256').update(given).digest('hex').slice(0, 16) : null;
}

/** A failed authentication, keyed twice: by the client address and by the token presented (if any). */
export interface FailedAttempt {
  /** The client's address (`request.ip`: the peer, or the client a trusted proxy names). */
  address: string;
  /** The token presented, if any (kept only as its hash). */
  token: string | undefined;
}

export interface AuthFailureLimits {
  /** Failures per key within the window before that key gets 429 (default 20). */
  limit?: number;
  windowMs?: number;
  /** Keys each table holds at most (default 10 000). */
  maxEntries?: number;
}

/** Failed attempts per key within a fixed window, in a bounded table (the oldest entries go first). */
class FailureWindows {
  readonly #entries = new Map<string, { count: number; since: number }>();

  constructor(private readonly limits: Required<AuthFailureLimits>) {}

  retryAfter(key: string, now: number): number {
    const entry = this.#entries.get(key);
    if (!entry || now - entry.since >= this.limits.windowMs || entry.count < this.limits.limit) return 0;
    return Math.ceil((entry.since + this.limits.windowMs - now) / 1000);
  }

  record(key: string, now: number): void {
    const entry = this.#entries.get(key);
    if (entry && now - entry.since < this.limits.windowMs) {
      entry.count++;
      return;
    }
    this.#entries.delete(key);
    if (this.#entries.size >= this.limits.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { count: 1, since: now });
  }
}

/**
 * Failed authentications within a window, per client address and per token
 * presented (by its hash: the table never holds a token): past the limit,
 * a failing attempt from that address or with that token gets 429 until
 * the window is over, telling a guesser or a client with a stale token to
 * back off, from one address or many. Only failures are ever throttled: a
 * valid token is checked first and always let through, so no one can lock
 * the holders of valid tokens out, whatever address they share (a reverse
 * proxy's, unless FORGESYNC_TRUST_PROXY names it). What keeps tokens from
 * being guessed is their length (at least 16 characters; 256 random bits
 * when generated), not this limit.
 */
export class AuthFailures {
  readonly #byAddress: FailureWindows;
  readonly #byToken: FailureWindows;

  constructor(limits: AuthFailureLimits = {}) {
    const all = { limit: limits.limit ?? 20, windowMs: limits.windowMs ?? 60_000, maxEntries: limits.maxEntries ?? 10_000 };
    this.#byAddress = new FailureWindows(all);
    this.#byToken = new FailureWindows(all);
  }

  /** Seconds until a failing attempt like `attempt` may be answered again (the longer wait of its two keys), or 0. */
  retryAfter(attempt: FailedAttempt, now = Date.now()): number {
    const byToken = attempt.token === undefined ? 0 : this.#byToken.retryAfter(tokenKey(attempt.token), now);
    return Math.max(this.#byAddress.retryAfter(attempt.address, now), byToken);
  }

  record(attempt: FailedAttempt, now = Date.now()): void {
    this.#byAddress.record(attempt.address, now);
    if (attempt.token !== undefined) this.#byToken.record(tokenKey(attempt.token), now);
  }
}

function tokenKey(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** What authenticating a request found: what it may do, or a refusal (throttled: the failure limit is reached). */
export type Authentication = { access: Access } | { refused: 'unauthorized' } | { refused: 'throttled'; retryAfterS: number };

/**
 * Authenticates a request: a valid token gets its access (also set as
 * `request.access`) whatever failed before; a failure is counted (per
 * address and per token) and answered `throttled` once either is past the
 * limit.
 */
export async function authenticate(request: FastifyRequest, tokens: AuthTokens, schemes: TokenSchemes = {}): Promise<Authentication> {
  const access = await accessOf(request, tokens, schemes);
  if (access) {
    request.access = access;
    return { access };
  }
  const failures = tokens.failures;
  if (!failures) return { refused: 'unauthorized' };
  const attempt = { address: request.ip, token: tokenOf(request, schemes) };
  const wait = failures.retryAfter(attempt);
  if (wait > 0) return { refused: 'throttled', retryAfterS: wait };
  failures.record(attempt);
  return { refused: 'unauthorized' };
}

/**
 * A hook that lets the request through only when it meets `needed`. A
 * scoped reader on a route that does not filter by name gets the 404 of
 * a route that is not there for it.
 */
export function requireAccess(needed: Requirement, tokens: AuthTokens) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const outcome = await authenticate(request, tokens);
    if ('access' in outcome) {
      const { role, sees } = outcome.access;
      if (needed === 'admin' && role !== 'admin') return reply.code(403).send({ error: 'forbidden', message: 'this token is read-only' });
      if (needed === 'read' && sees) return reply.callNotFound();
      return;
    }
    if (outcome.refused === 'throttled') {
      const wait = outcome.retryAfterS;
      return reply
        .code(429)
        .header('retry-after', String(wait))
        .send({ error: 'too_many_requests', message: `too many failed authentications from this address or with this token; try again in ${wait} s` });
    }
    return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'unauthorized', message: 'a valid bearer token is required' });
  };
}
