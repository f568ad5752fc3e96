import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { documentationUrlOf } from './docs.js';

/** What GitHub's error bodies link to. */
export const DOCUMENTATION_URL = 'https://docs.github.com/rest';

/** The content type of every JSON answer, as GitHub sends it. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The media type GitHub says it answered with (the default one, v3 JSON). */
export const GITHUB_MEDIA_TYPE = 'github.v3; format=json';

/** One entry of a 422's `errors`. */
export interface ValidationIssue {
  resource: string;
  field: string;
  code: 'invalid';
}

/**
 * A GitHub error body: `{ message, [errors], documentation_url, status }`
 * (status as a string, as GitHub sends it); `documentationUrl` is the page
 * of the operation asked for (docs.ts), GitHub's REST root by default.
 */
export function errorBody(status: number, message: string, errors?: ValidationIssue[], documentationUrl = DOCUMENTATION_URL): Record<string, unknown> {
  return { message, ...(errors ? { errors } : {}), documentation_url: documentationUrl, status: String(status) };
}

/** An error a handler throws to answer with GitHub's error shape. */
export class GithubApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly errors?: ValidationIssue[],
  ) {
    super(message);
    this.name = 'GithubApiError';
  }
}

/** GitHub's 404: `{"message":"Not Found",…}`, for anything missing, hidden or unknown. */
export function notFound(): GithubApiError {
  return new GithubApiError(404, 'Not Found');
}

/** GitHub's 410 for an issue that was deleted: `{"message":"This issue was deleted",…}`. */
export function issueDeleted(): GithubApiError {
  return new GithubApiError(410, 'This issue was deleted');
}

/** A 422 `Validation Failed` naming the fields of `resource` that were refused. */
export function validationFailed(resource: string, fields: readonly string[]): GithubApiError {
  return new GithubApiError(
    422,
    'Validation Failed',
    [...new Set(fields)].map((field) => ({ resource, field, code: 'invalid' as const })),
  );
}

/** Sends a GitHub-shaped error (JSON, with GitHub's media type header); its `documentation_url` is GitHub's REST root unless given. */
export function sendError(reply: FastifyReply, status: number, message: string, errors?: ValidationIssue[], documentationUrl?: string): FastifyReply {
  return reply
    .code(status)
    .header('content-type', JSON_CONTENT_TYPE)
    .header('x-github-media-type', GITHUB_MEDIA_TYPE)
    .header('x-content-type-options', 'nosniff')
    .send(JSON.stringify(errorBody(status, message, errors, documentationUrl)));
}

/** The GitHub resource a route's 422 errors name (route `config.resource`), e.g. `Issue`. */
function resourceOf(request: FastifyRequest): string {
  const config = request.routeOptions.config as { resource?: unknown } | undefined;
  return typeof config?.resource === 'string' ? config.resource : 'Resource';
}

/**
 * The plugin's error handler: every failure in GitHub's shape. A path
 * parameter that does not validate (`/issues/abc`) is a 404, as on GitHub;
 * a query value that does not is a 422 naming the field.
 */
export function githubErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const documentationUrl = documentationUrlOf(request);
  if (hasZodFastifySchemaValidationErrors(error)) {
    if (error.validationContext !== 'querystring') return sendError(reply, 404, 'Not Found', undefined, documentationUrl);
    const fields = error.validation.map((issue) => issue.instancePath.replace(/^\//, '').split('/')[0] || 'query');
    const failed = validationFailed(resourceOf(request), fields);
    return sendError(reply, 422, failed.message, failed.errors, documentationUrl);
  }
  if (error instanceof GithubApiError) return sendError(reply, error.statusCode, error.message, error.errors, documentationUrl);
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'GitHub-compatible API request failed');
    return sendError(reply, status, 'Server Error');
  }
  return sendError(reply, status, error.message);
}
