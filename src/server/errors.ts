import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { statusOfError, UnavailableError } from '../errors.js';

/** One JSON error shape for every failure: `{ error, message }` (plus `issues` for validation). */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (hasZodFastifySchemaValidationErrors(error)) {
    return reply.code(400).send({
      error: 'validation',
      message: `invalid request: ${error.validation.map((issue) => `${issue.instancePath || '/'} ${issue.message}`).join('; ')}`,
      issues: error.validation,
    });
  }
  // forgesync's own errors by their kind (errors.ts); Fastify's carry their status.
  const status = statusOfError(error) ?? error.statusCode ?? 500;
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  if (status === 503 && !(error instanceof UnavailableError && error.shownToCallers)) return reply.code(503).send({ error: 'unavailable', message: 'a backend forgesync needs is unavailable; see the server log' });
  const shown = status < 500 || status === 503;
  return reply.code(status).send({
    error: status === 503 ? 'unavailable' : shown ? error.code ?? error.name : 'internal',
    message: shown ? error.message : 'internal error; see the server log',
  });
}
