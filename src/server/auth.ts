import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** What a caller may do: read, or read and change. */
export type Role = 'read' | 'admin';

export interface AuthTokens {
  /** Always set for a running server (`serve` generates one when none is configured). */
  admin: string | undefined;
  read: string | undefined;
  /** Counts failed attempts per client address; set by the server. */
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
function tokenOf(request: FastifyRequest): string | undefined {
  return /^(?:Bearer|token)\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
}

/** The role a token grants, or null. There is no open mode: no token, no access. */
export function roleOf(request: FastifyRequest, tokens: AuthTokens): Role | null {
  const given = tokenOf(request);
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

/**
 * Failed authentications per client address within a window: past `limit`,
 * that address gets 429 until the window is over, so tokens cannot be
 * guessed at speed. The table is bounded: the oldest entries go first.
 */
export class AuthFailures {
  readonly #byAddress = new Map<string, { count: number; since: number }>();

  constructor(
    private readonly limit = 20,
    private readonly windowMs = 60_000,
    private readonly maxAddresses = 10_000,
  ) {}

  /** Seconds until `address` may try again, or 0 when it may now. */
  retryAfter(address: string, now = Date.now()): number {
    const entry = this.#byAddress.get(address);
    if (!entry || now - entry.since >= this.windowMs) return 0;
    return entry.count >= this.limit ? Math.ceil((entry.since + this.windowMs - now) / 1000) : 0;
  }

  record(address: string, now = Date.now()): void {
    const entry = this.#byAddress.get(address);
    if (entry && now - entry.since < this.windowMs) {
      entry.count++;
      return;
    }
    this.#byAddress.delete(address);
    if (this.#byAddress.size >= this.maxAddresses) this.#byAddress.delete(this.#byAddress.keys().next().value!);
    this.#byAddress.set(address, { count: 1, since: now });
  }
}

/** A preHandler that lets the request through only with at least `needed`. */
export function requireRole(needed: Role, tokens: AuthTokens) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const failures = tokens.failures;
    const wait = failures?.retryAfter(request.ip) ?? 0;
    if (wait > 0) {
      return reply
        .code(429)
        .header('retry-after', String(wait))
        .send({ error: 'too_many_requests', message: `too many failed authentications from this address; try again in ${wait} s` });
    }
    const role = roleOf(request, tokens);
    if (!role) {
      failures?.record(request.ip);
      return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'unauthorized', message: 'a valid bearer token is required' });
    }
    if (needed === 'admin' && role !== 'admin') {
      return reply.code(403).send({ error: 'forbidden', message: 'this token is read-only' });
    }
  };
}
