import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** What a caller may do: read, or read and change. */
export type Role = 'read' | 'admin';

export interface AuthTokens {
  /** Always set for a running server (`serve` generates one when none is configured). */
  admin: string | undefined;
  read: string | undefined;
  /** Counts failed attempts per client address and per token presented; set by the server. */
  failures?: AuthFailures;
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

/** The role a token grants, or null. There is no open mode: no token, no access. */
export function roleOf(request: FastifyRequest, tokens: AuthTokens, schemes: TokenSchemes = {}): Role | null {
  const given = tokenOf(request, schemes);
  if (!given) return null;
  if (tokens.admin && safeEqual(given, tokens.admin)) return 'admin';
  if (tokens.read && safeEqual(given, tokens.read)) return 'read';
  return null;
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

/** What authenticating a request found: a role, or a refusal (throttled: the failure limit is reached). */
export type Authentication = { role: Role } | { refused: 'unauthorized' } | { refused: 'throttled'; retryAfterS: number };

/**
 * Authenticates a request: a valid token gets its role whatever failed
 * before; a failure is counted (per address and per token) and answered
 * `throttled` once either is past the limit.
 */
export function authenticate(request: FastifyRequest, tokens: AuthTokens, schemes: TokenSchemes = {}): Authentication {
  const role = roleOf(request, tokens, schemes);
  if (role) return { role };
  const failures = tokens.failures;
  if (!failures) return { refused: 'unauthorized' };
  const attempt = { address: request.ip, token: tokenOf(request, schemes) };
  const wait = failures.retryAfter(attempt);
  if (wait > 0) return { refused: 'throttled', retryAfterS: wait };
  failures.record(attempt);
  return { refused: 'unauthorized' };
}

/** A preHandler that lets the request through only with at least `needed`. */
export function requireRole(needed: Role, tokens: AuthTokens) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const outcome = authenticate(request, tokens);
    if ('role' in outcome) {
      if (needed === 'admin' && outcome.role !== 'admin') return reply.code(403).send({ error: 'forbidden', message: 'this token is read-only' });
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
