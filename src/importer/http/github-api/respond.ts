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
 * When `value` last changed, to the second, as `Last-Modified` says it: the
 * `updated_at` of an object, the latest of a list's items; undefined when
 * there is none.
 */
export function lastModifiedOf(value: unknown): number | undefined {
  const times = (Array.isArray(value) ? value : [value]).map((item) => Date.parse(String((item as { updated_at?: unknown } | null)?.updated_at ?? '')));
  const latest = Math.max(...times.filter((time) => Number.isFinite(time)));
  return Number.isFinite(latest) ? Math.floor(latest / 1000) * 1000 : undefined;
}

/** Whether the client's copy is current: `If-None-Match` has the ETag; without that header, `If-Modified-Since` is not before the last change (RFC 9110). */
function notModified(request: FastifyRequest, etag: string, lastModified: number | undefined): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch) return matchesEtag(ifNoneMatch, etag);
  const since = Date.parse(request.headers['if-modified-since'] ?? '');
  return lastModified !== undefined && Number.isFinite(since) && lastModified <= since;
}

/**
 * Answers with `value` as GitHub would: JSON (`application/json;
 * charset=utf-8`), GitHub's media type header, a strong ETag of the body
 * and `Last-Modified` (see lastModifiedOf), 304 when the client's copy is
 * current, and `link` when the list has more pages.
 */
export function sendJson(request: FastifyRequest, reply: FastifyReply, value: unknown, link?: string): FastifyReply {
  return sendPrepared(request, reply, prepareJson(value), link);
}

/** An answer's body as sent, its strong ETag and its `Last-Modified` (see lastModifiedOf): what a remembered answer keeps. */
export interface PreparedJson {
  body: string;
  etag: string;
  lastModified: number | undefined;
}

/** Inputs: the value answered. Returns its JSON text, the ETag of that text and its Last-Modified. */
export function prepareJson(value: unknown): PreparedJson {
  const body = JSON.stringify(value);
  return { body, etag: `"${createHash('sha256').update(body).digest('hex')}"`, lastModified: lastModifiedOf(value) };
}

/** sendJson's answer for a body already prepared (prepareJson), e.g. one remembered from an earlier request. */
export function sendPrepared(request: FastifyRequest, reply: FastifyReply, { body, etag, lastModified }: PreparedJson, link?: string): FastifyReply {
  reply
    .header('content-type', JSON_CONTENT_TYPE)
    .header('x-github-media-type', GITHUB_MEDIA_TYPE)
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'private, max-age=60, s-maxage=60')
    .header('vary', 'Accept, Authorization')
    .header('etag', etag);
  if (lastModified !== undefined) reply.header('last-modified', new Date(lastModified).toUTCString());
  if (link) reply.header('link', link);
  if (notModified(request, etag, lastModified)) return reply.code(304).send();
  return reply.code(200).send(body);
}
