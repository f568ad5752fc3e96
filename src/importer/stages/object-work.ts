import type { Compilable, Kysely } from 'kysely';
import type { BoundToken } from '../../credentials/store.js';
import { EgressResponseTooLargeError } from '../../egress/errors.js';
import type { EgressPolicy } from '../../egress/policy.js';
import type { Schema } from '../../store/types.js';
import { downloadFile } from '../attachments/download.js';
import { fileNameOf } from '../attachments/names.js';
import type { FileHosts } from '../attachments/scan.js';
import type { GithubClient } from '../github/client.js';
import type { GithubResponse } from '../github/client-types.js';
import { GithubAnswerError, GithubAuthError, GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import { checkObject, listItems } from '../run/shape.js';
import { messageOf, PER_PAGE } from '../run/walk.js';
import { finishFileStep, findFile } from '../store/attachments.js';
import { findCursor, startCursor, writeCursorStep } from '../store/cursors.js';
import { clearFailureStep, recordFailureStep, type ImportFailure } from '../store/failures.js';
import { readUser, writeUserStep } from '../store/users.js';
import { fetchPullObject } from './pull-object.js';

/** What a per-object job works with. */
export interface ObjectWorkContext {
  db: Kysely<Schema>;
  importId: number;
  importName: string;
  run: number;
  mode: 'full' | 'sync';
  apiUrl: string;
  repoPath: string;
  hosts: FileHosts;
  client: GithubClient;
  policy: EgressPolicy;
  /** Tokens that may go with a file download (each only to the hosts its credential is bound to). */
  tokens: readonly BoundToken[];
  filesDir: string;
  maxFileBytes: number;
  signal: AbortSignal;
}

/** What a job stores, or why it could not. */
export type ObjectOutcome = { steps: (Compilable | null)[] } | { failure: ImportFailure; steps?: (Compilable | null)[] };

/**
 * Runs the per-object job `key` (`pull:<n>`, `file:<url key>`,
 * `user:<login>`; `reviews:<n>` is a job an earlier version recorded,
 * resumed as it was: the reviews only).
 */
export async function objectWork(ctx: ObjectWorkContext, key: string): Promise<ObjectOutcome> {
  const [kind, ...rest] = key.split(':');
  const arg = rest.join(':');
  try {
    if (kind === 'pull') return await pullRequest(ctx, Number(arg));
    if (kind === 'reviews') return await reviews(ctx, Number(arg));
    if (kind === 'file') return await file(ctx, arg);
    if (kind === 'user') return await user(ctx, arg);
  } catch (error) {
    if (error instanceof GithubRequestError || error instanceof GithubAuthError || error instanceof GithubAnswerError) return { failure: { type: typeOfJob(kind), id: arg, error: error.message } };
    throw error;
  }
  return { failure: { type: 'unknown', id: key, error: `unknown job ${key}` } };
}

/** The failure type of a job that threw (a pull request's job throws only from its reviews: its object's failures are its own, see pull-object.ts). */
function typeOfJob(kind: string | undefined): string {
  return kind === 'reviews' || kind === 'pull' ? 'pull_request_review' : kind === 'file' ? 'attachment' : 'user';
}

/**
 * A pull request's job: its single object (pull-object.ts), then its
 * reviews, stored together in the job's one write. The reviews are fetched
 * while GitHub may still be computing the object's `mergeable` (see
 * fetchPullObject), and not at all when the pull request is gone. Both
 * parts failing lists both; the job is failed by its reviews' failure.
 */
async function pullRequest(ctx: ObjectWorkContext, number: number): Promise<ObjectOutcome> {
  let reviewed: ObjectOutcome | undefined;
  const object = await fetchPullObject(ctx, number, async () => {
    reviewed = await reviews(ctx, number);
  });
  if ('failure' in object && object.gone) return { failure: object.failure };
  reviewed ??= await reviews(ctx, number);
  const objectSteps = 'steps' in object ? object.steps : [];
  const reviewSteps = reviewed.steps ?? [];
  if ('failure' in reviewed && reviewed.failure) {
    const objectFailure = 'failure' in object ? [recordFailureStep(ctx.db, ctx.importId, ctx.run, object.failure, Date.now())] : [];
    return { failure: reviewed.failure, steps: [...objectSteps, ...objectFailure, ...reviewSteps] };
  }
  if ('failure' in object) return { failure: object.failure, steps: reviewSteps };
  return { steps: [...objectSteps, ...reviewSteps] };
}

/** The most pages of reviews one pull request's job gathers: they are held together until its one write, so a host linking on forever must not grow them. */
const MAX_REVIEW_PAGES = 30;

/** `/pulls/{n}/reviews`, every page (up to MAX_REVIEW_PAGES); a sync asks conditionally (per pull request ETag). */
async function reviews(ctx: ObjectWorkContext, number: number): Promise<ObjectOutcome> {
  const name = `reviews/${number}`;
  // Only a sync asks conditionally, with the ETag an earlier run left.
  const cursor = startCursor(name, ctx.run, ctx.mode === 'sync' ? await findCursor(ctx.db, ctx.importId, name) : undefined);
  const batch = new PageBatch(ctx);
  let url: string | undefined = `${ctx.repoPath}/pulls/${number}/reviews`;
  let etag: string | null = null;
  for (let page = 1; url; page++) {
    if (page > MAX_REVIEW_PAGES) {
      const error = `more than ${MAX_REVIEW_PAGES * PER_PAGE} reviews (${MAX_REVIEW_PAGES} pages, far more than any pull request has): the API host's next links were not followed further; the first ${MAX_REVIEW_PAGES} pages are stored`;
      return { failure: { type: 'pull_request_review', id: `#${number}`, error }, steps: await batch.steps() };
    }
    const response: GithubResponse = await ctx.client.get(url, page === 1 ? { query: { per_page: PER_PAGE }, etag: ctx.mode === 'sync' ? cursor.etag : null } : {});
    if (response.status === 304) return { steps: [writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true }, Date.now())] };
    if (response.status === 404) return { failure: { type: 'pull_request_review', id: `#${number}`, error: 'the pull request is gone (404)' } };
    if (response.status >= 300) throw new GithubRequestError(url, response.status, messageOf(response.data));
    if (page === 1) etag = response.etag ?? null;
    for (const review of listItems(url, response.data)) {
      batch.add({ type: 'pull_request_review', key: String(review.id), number, createdAt: review.submitted_at ?? null, data: review });
    }
    url = response.links.next;
  }
  return { steps: [...(await batch.steps()), writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true, etag, pages: cursor.pages + 1 }, Date.now()), clearFailureStep(ctx.db, ctx.importId, 'pull_request_review', `#${number}`)] };
}

/** Longest one attachment or release asset download may take. */
export const FILE_DOWNLOAD_TIMEOUT_MS = 120_000;

/**
 * Downloads a file once into `<filesDir>/<sha256>` (content-addressed: the
 * same bytes linked twice are stored once), streamed to disk. Every hop must stay on the
 * project's hosts, a token goes only where its credential is bound, and a
 * file over the cap is left as a link. A release asset is asked of the API's
 * asset endpoint (its `fetch_url`), see {@link releaseAssetRequest}.
 */
async function file(ctx: ObjectWorkContext, key: string): Promise<ObjectOutcome> {
  const row = await findFile(ctx.db, ctx.importId, key);
  if (!row) return { steps: [] };
  const now = Date.now();
  const fail = (error: string): ObjectOutcome => ({
    failure: { type: row.kind === 'release_asset' ? 'release_asset' : 'attachment', id: row.url, error },
    steps: [finishFileStep(ctx.db, ctx.importId, key, { state: 'failed', error }, now)],
  });
  const url = new URL(row.url);
  // A row with an API endpoint is a release asset's (also when a body linked its download URL before its release was listed).
  const source = row.fetch_url ? releaseAssetRequest(ctx, new URL(row.fetch_url)) : fileRequest(ctx, url);
  if (!ctx.hosts.allows(source.url)) return fail('not on the project\'s own hosts: left as a link');
  let download;
  try {
    // Streamed to disk as it arrives: several downloads at once hold a few buffers each, not their files.
    const send = () =>
      downloadFile(source.url, {
        policy: ctx.policy,
        signal: ctx.signal,
        timeoutMs: FILE_DOWNLOAD_TIMEOUT_MS,
        maxBytes: ctx.maxFileBytes,
        filesDir: ctx.filesDir,
        follow: source.follow,
        headers: source.headers,
      });
    // A release asset is asked of the API host: paced with the API requests, as they share its secondary limit.
    download = row.fetch_url ? await ctx.client.paced(source.url, send, (answer) => answer.stored) : await send();
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    return fail(error instanceof EgressResponseTooLargeError ? `larger than the ${ctx.maxFileBytes}-byte cap: left as a link` : (error as Error).message);
  }
  if (!download.stored) {
    if (download.status >= 300 && download.status < 400) return fail(`redirected off the project's hosts (${download.location ? withoutQuery(download.location) : 'no location'}): left as a link`);
    return fail(`HTTP ${download.status}`);
  }
  const { sha256, size, contentType } = download;
  const filename = fileNameOf(url);
  const steps: (Compilable | null)[] = [finishFileStep(ctx.db, ctx.importId, key, { state: 'done', sha256, size, contentType, filename }, now)];
  if (row.kind === 'attachment') {
    const batch = new PageBatch(ctx);
    batch.objects.push({ type: 'attachment', key, data: { url: row.url, sha256, size, content_type: contentType, filename } });
    steps.push(...(await batch.steps()), clearFailureStep(ctx.db, ctx.importId, 'attachment', row.url));
  }
  return { steps };
}

/** A redirect's target without its query: a signed storage URL's signature is a short-lived credential, not kept in failures. */
function withoutQuery(location: string): string {
  const at = location.search(/[?#]/);
  return at === -1 ? location : location.slice(0, at);
}

/** Where a file's bytes are asked for, which redirects are followed, and the headers of each hop. */
interface FileRequest {
  url: URL;
  follow: (next: URL) => boolean;
  headers: (hop: URL) => Record<string, string>;
}

/** A token of the import's credentials that may go to `hop`, as an authorization header (none when no binding allows it). */
function authorizationFor(ctx: ObjectWorkContext, hop: URL): Record<string, string> {
  const token = ctx.tokens.find((candidate) => candidate.allows(hop));
  return token ? { authorization: `token ${token.token}` } : {};
}

/** An attachment: its URL, redirects within the project's hosts, a token on every hop its credential is bound to. */
function fileRequest(ctx: ObjectWorkContext, url: URL): FileRequest {
  return {
    url,
    follow: (next) => ctx.hosts.allows(next),
    headers: (hop) => ({ 'user-agent': 'forgesync', accept: '*/*', ...authorizationFor(ctx, hop) }),
  };
}

/**
 * A release asset, from the API's asset endpoint with `Accept:
 * application/octet-stream`: it answers the bytes or a 302 to GitHub's
 * storage (a signed URL). The token goes only to the endpoint's own origin
 * (where its binding allows); the storage hop gets none, whatever the
 * bindings say (a signed URL needs none, and S3 refuses a request that
 * carries both).
 */
function releaseAssetRequest(ctx: ObjectWorkContext, endpoint: URL): FileRequest {
  return {
    url: endpoint,
    follow: (next) => ctx.hosts.allowsReleaseAsset(next),
    headers: (hop) =>
      hop.origin === endpoint.origin
        ? { 'user-agent': 'forgesync', accept: 'application/octet-stream', ...authorizationFor(ctx, hop) }
        : { 'user-agent': 'forgesync', accept: '*/*' },
  };
}

/** A profile, from the shared cache when fresh, else asked for (conditionally when cached: a 304 is free). */
async function user(ctx: ObjectWorkContext, login: string): Promise<ObjectOutcome> {
  const now = Date.now();
  const cached = await readUser(ctx.db, ctx.apiUrl, login, now);
  if (cached && cached.expiresAt > now) return { steps: [] };
  const response = await ctx.client.get(`/users/${encodeURIComponent(login)}`, { etag: cached?.state === 'found' ? cached.etag : null });
  if (response.status === 304 && cached) return { steps: [writeUserStep(ctx.db, ctx.apiUrl, { ...cached }, now)] };
  if (response.status === 404) {
    return {
      failure: { type: 'user', id: login, error: 'no such user on GitHub (404): the account was deleted or renamed' },
      steps: [writeUserStep(ctx.db, ctx.apiUrl, { login, state: 'missing', data: null, etag: null }, now)],
    };
  }
  if (response.status !== 200) throw new GithubRequestError(`/users/${login}`, response.status, messageOf(response.data));
  checkObject(`/users/${login}`, response.data);
  return { steps: [writeUserStep(ctx.db, ctx.apiUrl, { login, state: 'found', data: response.data, etag: response.etag ?? null }, now), clearFailureStep(ctx.db, ctx.importId, 'user', login)] };
}

/** The failure statement of an outcome (with the import's run). */
export function failureSteps(ctx: Pick<ObjectWorkContext, 'db' | 'importId' | 'run'>, outcome: ObjectOutcome): (Compilable | null)[] {
  if (!('failure' in outcome) || !outcome.failure) return outcome.steps ?? [];
  return [...(outcome.steps ?? []), recordFailureStep(ctx.db, ctx.importId, ctx.run, outcome.failure, Date.now())];
}
