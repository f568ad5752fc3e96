import { createHash, randomUUID } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Compilable, Kysely } from 'kysely';
import type { BoundToken } from '../../credentials/store.js';
import { requestFollowingRedirects } from '../../egress/http.js';
import type { EgressPolicy } from '../../egress/policy.js';
import type { Schema } from '../../store/types.js';
import type { FileHosts } from '../attachments/scan.js';
import type { GithubClient, GithubResponse } from '../github/client.js';
import { GithubAuthError, GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import { messageOf, PER_PAGE } from '../run/walk.js';
import { finishFileStep, getFile } from '../store/attachments.js';
import { getCursor, startCursor, writeCursorStep } from '../store/cursors.js';
import { clearFailureStep, recordFailureStep, type ImportFailure } from '../store/failures.js';
import { readUser, writeUserStep } from '../store/users.js';

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

/** Runs the per-object job `key` (`reviews:<n>`, `file:<url key>`, `user:<login>`). */
export async function objectWork(ctx: ObjectWorkContext, key: string): Promise<ObjectOutcome> {
  const [kind, ...rest] = key.split(':');
  const arg = rest.join(':');
  try {
    if (kind === 'reviews') return await reviews(ctx, Number(arg));
    if (kind === 'file') return await file(ctx, arg);
    if (kind === 'user') return await user(ctx, arg);
  } catch (error) {
    if (error instanceof GithubRequestError || error instanceof GithubAuthError) return { failure: { type: typeOfJob(kind), id: arg, error: error.message } };
    throw error;
  }
  return { failure: { type: 'unknown', id: key, error: `unknown job ${key}` } };
}

function typeOfJob(kind: string | undefined): string {
  return kind === 'reviews' ? 'pull_request_review' : kind === 'file' ? 'attachment' : 'user';
}

/** `/pulls/{n}/reviews`, every page; a sync asks conditionally (per pull request ETag). */
async function reviews(ctx: ObjectWorkContext, number: number): Promise<ObjectOutcome> {
  const name = `reviews/${number}`;
  // Only a sync asks conditionally, with the ETag an earlier run left.
  const cursor = startCursor(name, ctx.run, ctx.mode === 'sync' ? await getCursor(ctx.db, ctx.importId, name) : undefined);
  const batch = new PageBatch(ctx);
  let url: string | undefined = `${ctx.repoPath}/pulls/${number}/reviews`;
  let etag: string | null = null;
  for (let page = 1; url; page++) {
    const response: GithubResponse = await ctx.client.get(url, page === 1 ? { query: { per_page: PER_PAGE }, etag: ctx.mode === 'sync' ? cursor.etag : null } : {});
    if (response.status === 304) return { steps: [writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true }, Date.now())] };
    if (response.status === 404) return { failure: { type: 'pull_request_review', id: `#${number}`, error: 'the pull request is gone (404)' } };
    if (response.status >= 300) throw new GithubRequestError(url, response.status, messageOf(response.data));
    if (page === 1) etag = response.etag ?? null;
    for (const review of response.data as any[]) {
      batch.add({ type: 'pull_request_review', key: String(review.id), number, createdAt: review.submitted_at ?? null, data: review });
    }
    url = response.links.next;
  }
  return { steps: [...(await batch.steps()), writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true, etag, pages: cursor.pages + 1 }, Date.now()), clearFailureStep(ctx.db, ctx.importId, 'pull_request_review', `#${number}`)] };
}

/**
 * Downloads a file once into `<filesDir>/<sha256>` (content-addressed: the
 * same bytes linked twice are stored once). Every hop must stay on the
 * project's hosts, a token goes only where its credential is bound, and a
 * file over the cap is left as a link.
 */
async function file(ctx: ObjectWorkContext, key: string): Promise<ObjectOutcome> {
  const row = await getFile(ctx.db, ctx.importId, key);
  if (!row) return { steps: [] };
  const now = Date.now();
  const fail = (error: string): ObjectOutcome => ({
    failure: { type: row.kind === 'release_asset' ? 'release_asset' : 'attachment', id: row.url, error },
    steps: [finishFileStep(ctx.db, ctx.importId, key, { state: 'failed', error }, now)],
  });
  const url = new URL(row.url);
  if (!ctx.hosts.allows(url)) return fail('not on the project\'s own hosts: left as a link');
  let response;
  try {
    response = await requestFollowingRedirects(url, {
      policy: ctx.policy,
      signal: ctx.signal,
      timeoutMs: 120_000,
      maxBytes: ctx.maxFileBytes,
      follow: (next) => ctx.hosts.allows(next),
      headers: (hop) => {
        const token = ctx.tokens.find((candidate) => candidate.allows(hop));
        return { 'user-agent': 'forgesync', accept: '*/*', ...(token ? { authorization: `token ${token.token}` } : {}) };
      },
    });
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    const message = (error as Error).message;
    return fail(/larger than/.test(message) ? `larger than the ${ctx.maxFileBytes}-byte cap: left as a link` : message);
  }
  if (response.status >= 300 && response.status < 400) return fail(`redirected off the project's hosts (${response.headers.location ?? 'no location'}): left as a link`);
  if (response.status !== 200) return fail(`HTTP ${response.status}`);
  const sha256 = createHash('sha256').update(response.body).digest('hex');
  await mkdir(ctx.filesDir, { recursive: true });
  const target = join(ctx.filesDir, sha256);
  const temporary = `${target}.${randomUUID()}.tmp`;
  try {
    await writeFile(temporary, response.body, { flag: 'wx' });
    await rename(temporary, target);
  } finally {
    await rm(temporary, { force: true });
  }
  const filename = decodeURIComponent(url.pathname.split('/').pop() || 'file').slice(0, 255);
  const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
  const steps: (Compilable | null)[] = [finishFileStep(ctx.db, ctx.importId, key, { state: 'done', sha256, size: response.body.length, contentType, filename }, now)];
  if (row.kind === 'attachment') {
    const batch = new PageBatch(ctx);
    batch.objects.push({ type: 'attachment', key, data: { url: row.url, sha256, size: response.body.length, content_type: contentType, filename } });
    steps.push(...(await batch.steps()), clearFailureStep(ctx.db, ctx.importId, 'attachment', row.url));
  }
  return { steps };
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
  return { steps: [writeUserStep(ctx.db, ctx.apiUrl, { login, state: 'found', data: response.data, etag: response.etag ?? null }, now), clearFailureStep(ctx.db, ctx.importId, 'user', login)] };
}

/** The failure statement of an outcome (with the import's run). */
export function failureSteps(ctx: Pick<ObjectWorkContext, 'db' | 'importId' | 'run'>, outcome: ObjectOutcome): (Compilable | null)[] {
  if (!('failure' in outcome) || !outcome.failure) return outcome.steps ?? [];
  return [...(outcome.steps ?? []), recordFailureStep(ctx.db, ctx.importId, ctx.run, outcome.failure, Date.now())];
}
