import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { statusOfError, UnavailableError } from '../errors.js';
import type { ServerPaths } from '../util/server-paths.js';

/**
 * One JSON error shape for every failure: `{ error, message }` (plus `issues`
 * for validation). Messages are shown with the server's directories hidden
 * (`paths`): git's and the file system's errors name them; the log keeps them.
 */
export function errorHandler(paths: ServerPaths) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => answerError(error, request, reply, paths);
}

function answerError(error: FastifyError, request: FastifyRequest, reply: FastifyReply, paths: ServerPaths) {
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
    message: shown ? paths.hide(error.message) : 'internal error; see the server log',
  });
}
