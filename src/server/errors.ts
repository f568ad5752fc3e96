import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';

/** HTTP status for each error forgesync raises on purpose; anything else is a 500. */
const STATUS_BY_NAME: Record<string, number> = {
  SourceNotFoundError: 404,
  UnknownSourceError: 404,
  SourceExistsError: 409,
  InvalidRemoteUrlError: 400,
  InvalidGitProtocolError: 400,
  InvalidSourceNameError: 400,
  InvalidScheduleError: 400,
  CredentialError: 400,
  InvalidLeaseKeyError: 400,
  InvalidLeaseOptionError: 400,
  LeaseUnavailableError: 409,
  InvalidSnapshotRequestError: 400,
  SnapshotPathEscapeError: 400,
  RevisionNotFoundError: 404,
  PathNotFoundError: 404,
  SnapshotHoldNotFoundError: 404,
  SnapshotUnavailableError: 409,
};

/** One JSON error shape for every failure: `{ error, message }` (plus `issues` for validation). */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (hasZodFastifySchemaValidationErrors(error)) {
    return reply.code(400).send({
      error: 'validation',
      message: `invalid request: ${error.validation.map((issue) => `${issue.instancePath || '/'} ${issue.message}`).join('; ')}`,
      issues: error.validation,
    });
  }
  const status = STATUS_BY_NAME[error.name] ?? error.statusCode ?? 500;
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  return reply.code(status).send({
    error: status >= 500 ? 'internal' : error.code ?? error.name,
    message: status >= 500 ? 'internal error; see the server log' : error.message,
  });
}
