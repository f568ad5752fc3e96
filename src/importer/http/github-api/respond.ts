import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GITHUB_MEDIA_TYPE, JSON_CONTENT_TYPE } from './errors.js';

/** Whether `If-None-Match` (a list of entity tags, or `*`) matches `etag`, compared weakly as RFC 9110 says for it. */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = opaque(etag);
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === wanted);
}

/**
 * Answers with `value` as GitHub would: JSON (`application/json;
 * charset=utf-8`), GitHub's media type header, a weak ETag of the body and
 * 304 when `If-None-Match` has it, and `link` when the list has more pages.
 */
export function sendJson(request: FastifyRequest, reply: FastifyReply, value: unknown, link?: string): FastifyReply {
  const body = JSON.stringify(value);
  const etag = `W/"${createHash('sha256').update(body).digest('hex')}"`;
  reply
    .header('content-type', JSON_CONTENT_TYPE)
    .header('x-github-media-type', GITHUB_MEDIA_TYPE)
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'private, max-age=60, s-maxage=60')
    .header('vary', 'Accept, Authorization')
    .header('etag', etag);
  if (link) reply.header('link', link);
  if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply.code(200).send(body);
}
