import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** What a caller may do: read, or read and change. */
export type Role = 'read' | 'admin';

export interface AuthTokens {
  admin: string | undefined;
  read: string | undefined;
}

/** Compares secrets in constant time (hashing first so lengths do not leak either). */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The role a bearer token grants, or null. With no token configured, everyone is admin (loopback only). */
export function roleOf(request: FastifyRequest, tokens: AuthTokens): Role | null {
  if (!tokens.admin && !tokens.read) return 'admin';
  const header = request.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  // Bearer header only: the dashboard keeps the token in session storage and
  // sends it as a header, so there is no ambient cookie for CSRF to abuse.
  const given = match?.[1];
  if (!given) return null;
  if (tokens.admin && safeEqual(given, tokens.admin)) return 'admin';
  if (tokens.read && safeEqual(given, tokens.read)) return 'read';
  return null;
}

/**
 * A stable, non-secret identifier of the bearer token a request carries
 * (the first 16 hex digits of its SHA-256), so that what one caller made
 * (a snapshot hold) can be told from what another made; null without a token.
 */
export function callerOf(request: FastifyRequest): string | null {
  const match = /^(?:Bearer|token)\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  return match?.[1] ? createHash('sha256').update(match[1]).digest('hex').slice(0, 16) : null;
}

/** A preHandler that lets the request through only with at least `needed`. */
export function requireRole(needed: Role, tokens: AuthTokens) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const role = roleOf(request, tokens);
    if (!role) {
      return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'unauthorized', message: 'a valid bearer token is required' });
    }
    if (needed === 'admin' && role !== 'admin') {
      return reply.code(403).send({ error: 'forbidden', message: 'this token is read-only' });
    }
  };
}
