import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { requireAccess, type AuthTokens, type Requirement } from '../auth.js';
import { ErrorSchema } from '../schemas.js';

/** The OpenAPI security requirement of every API route: a bearer token. */
export const BEARER = [{ bearer: [] as string[] }];

/**
 * Route options that require `needed` (see Requirement): checked in
 * `onRequest`, so an unauthenticated request is refused (401/403) before
 * its body is parsed or validated.
 */
export function access(needed: Requirement, tokens: AuthTokens) {
  return { onRequest: requireAccess(needed, tokens) };
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'invalid request',
  401: 'no valid bearer token',
  403: 'the token is read-only',
  404: 'not found',
  409: 'conflict (name taken, or the lease is busy)',
};

/** Documented error responses (`{ error, message }`) for these status codes, plus 401. */
export function errorResponses<const C extends number>(...codes: C[]): Record<C | 401, typeof ErrorSchema> {
  const out = {} as Record<C | 401, typeof ErrorSchema>;
  for (const code of [401, ...codes] as (C | 401)[]) out[code] = ErrorSchema.describe(DESCRIPTIONS[code] ?? 'error');
  return out;
}

/** A `{ error: 'not_found', message }` body. */
export function notFound(message: string): z.output<typeof ErrorSchema> {
  return { error: 'not_found', message };
}

/** The value of a request header, when present once as a string. */
export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}
