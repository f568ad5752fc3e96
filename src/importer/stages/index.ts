import { GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import type { RunContext } from '../run/context.js';
import { messageOf, walk } from '../run/walk.js';
import { filesToDownload } from '../store/attachments.js';
import { deleteCursorsStep, findCursor, listCursors, startCursor, writeCursorStep } from '../store/cursors.js';
import { clearFailureStep, recordFailureStep } from '../store/failures.js';
import { deleteObjectsSteps, storedObjects } from '../store/deletions.js';
import { numbersWritten } from '../store/objects.js';
import { issueNumbersCreatedBy, oldestEventCreatedAt, protectedBranchNames, pullNumbersWithoutObject } from '../store/stage-objects.js';
import { extendFreshProfilesStep, loginsToFetch } from '../store/users.js';
import type { Stage } from '../types.js';
import {
  diffNotesCollection,
  eventsCollection,
  issueEventsCollection,
  issuesCollection,
  labelsCollection,
  milestonesCollection,
  notesCollection,
  PROTECTION_PREFIX,
  protectedBranchesCollection,
  pullsCollection,
  releasesCollection,
} from './collections.js';
import { importCollaborators } from './collaborators.js';
import { reconcile } from './reconcile.js';
import { dropDeletedComments, walkAndDropUnlisted } from './deletions.js';
import { compareInFullWhenDue } from './full-compare.js';
import { inParallel } from './parallel.js';
import { repositoryStage } from './repository.js';

/** What stages need besides the run: the fan-out of per-object jobs and the git sources. */
export interface StageEnv {
  /** Runs the per-object jobs `keys` of `stage` (through the job transport) and returns when none is pending. */
  fanOut(ctx: RunContext, stage: Stage, keys: readonly string[]): Promise<void>;
  /** Registers (or requests a sync of) the repository's and the wiki's git sources; returns their names. */
  ensureSources(ctx: RunContext, repository: any): Promise<{ repository: string | null; wiki: string | null }>;
  /** Waits until the git sources have synced (or failed). */
  waitSources(ctx: RunContext): Promise<void>;
  /** How often a sync compares the large lists in full (FORGESYNC_IMPORT_RECONCILE_INTERVAL). */
  reconcileIntervalMs: number;
}

type StageRunner = (ctx: RunContext, env: StageEnv) => Promise<void>;

const repository: StageRunner = (ctx, env) => repositoryStage(ctx, env);

/** Labels, milestones and releases: small lists, listed whole on every run; those they no longer give are deleted (see walkAndDropUnlisted). */
const baseData: StageRunner = async (ctx) => {
  await Promise.all([
    walkAndDropUnlisted(ctx, labelsCollection(ctx), ['label']),
    walkAndDropUnlisted(ctx, milestonesCollection(ctx), ['milestone']),
    walkAndDropUnlisted(ctx, releasesCollection(ctx), ['release', 'release_asset']),
  ]);
};

const pullRequests: StageRunner = async (ctx) => {
  await walk(ctx, pullsCollection(ctx));
};

const collaborators: StageRunner = async (ctx) => {
  await importCollaborators(ctx);
};

const issues: StageRunner = async (ctx) => {
  await Promise.all([walk(ctx, issuesCollection(ctx)), walk(ctx, diffNotesCollection(ctx))]);
};

/** Where the repo-wide events list stopped at the page cap (its `since`: the oldest event it gave), for the walks per issue. */
const EVENTS_BY_ISSUE = 'events-by-issue';

/**
 * Events: the repo-wide list, newest first. GitHub has no `since` for it,
 * so past its page cap the older events are fetched per issue: for every
 * issue and pull request created before the oldest event the list gave.
 * That time is stored before the first issue's walk: those walks store
 * older events, and a resume that took the oldest stored again would skip
 * the issues between.
 */
const events: StageRunner = async (ctx) => {
  const perIssue = async () => {
    let stop = startCursor(EVENTS_BY_ISSUE, ctx.run, await findCursor(ctx.db, ctx.importId, EVENTS_BY_ISSUE));
    if (!stop.done) {
      stop = { ...stop, done: true, since: await oldestEventCreatedAt(ctx.db, ctx.importId) };
      await ctx.commit([writeCursorStep(ctx.db, ctx.importId, stop, Date.now())]);
    }
    const numbers = await issueNumbersCreatedBy(ctx.db, ctx.importId, stop.since);
    await inParallel(ctx.concurrency, numbers, (row) => walk(ctx, issueEventsCollection(ctx, Number(row.number))));
  };
  await walk(ctx, eventsCollection(ctx, perIssue));
};

const notes: StageRunner = async (ctx) => {
  await walk(ctx, notesCollection(ctx));
};

/**
 * Reviews: one job per pull request, which fetches the pull request's
 * single object and its reviews (see object-work.ts): all of them on the
 * first run; on a sync those the sync's list gave (that changed), and those
 * stored without their single object (imported before the importer asked
 * for it, or whose GET failed).
 */
const reviews: StageRunner = async (ctx, env) => {
  const sync = ctx.record.mode === 'sync';
  const changed = await numbersWritten(ctx.db, ctx.importId, 'pull_request', sync ? ctx.run : null);
  const incomplete = sync ? await pullNumbersWithoutObject(ctx.db, ctx.importId) : [];
  const numbers = [...new Set([...changed, ...incomplete])].sort((a, b) => a - b);
  await env.fanOut(ctx, 'reviews', numbers.map((number) => `pull:${number}`));
};

/** Attachments and release assets: one download job per distinct URL not yet downloaded. */
const attachments: StageRunner = async (ctx, env) => {
  const files = await filesToDownload(ctx.db, ctx.importId);
  await env.fanOut(ctx, 'attachments', files.map((file) => `file:${file.key}`));
};

/**
 * Protected branches: their names from the branch list, then each one's
 * rules (conditionally on a sync). The names are the `protection/<name>`
 * cursors the list planned in this run, stored with its pages; those of
 * other runs, and the rules stored for them, are of branches no longer
 * protected.
 */
const protectedBranches: StageRunner = async (ctx) => {
  const list = await walk(ctx, protectedBranchesCollection(ctx)).catch(async (error: unknown) => {
    if (error instanceof GithubRequestError && (error.status === 403 || error.status === 404)) {
      await ctx.commit([recordFailureStep(ctx.db, ctx.importId, ctx.run, { type: 'protected_branch', id: 'branches', error: error.message }, Date.now())]);
      return null;
    }
    throw error;
  });
  if (list === null) return;
  const cursors = await listCursors(ctx.db, ctx.importId, PROTECTION_PREFIX);
  const planned = cursors.filter((cursor) => cursor.run === ctx.run);
  const names = new Set(planned.map((cursor) => cursor.collection.slice(PROTECTION_PREFIX.length)));
  const stale = cursors.filter((cursor) => cursor.run !== ctx.run).map((cursor) => cursor.collection);
  const gone = (await protectedBranchNames(ctx.db, ctx.importId)).filter((name) => !names.has(name));
  if (gone.length > 0 || stale.length > 0) {
    // Deleted with a `deleted` change each, for the feeds.
    const rules = await storedObjects(ctx.db, ctx.importId, { type: 'protected_branch', keys: gone });
    await ctx.commit([...deleteObjectsSteps(ctx.db, ctx.importId, ctx.importName, rules, Date.now()), deleteCursorsStep(ctx.db, ctx.importId, stale)]);
  }
  await inParallel(ctx.concurrency, planned.filter((cursor) => !cursor.done), async (cursor) => {
    const name = cursor.collection.slice(PROTECTION_PREFIX.length);
    const path = `${ctx.repoPath}/branches/${encodeURIComponent(name)}/protection`;
    const response = await ctx.client.get(path, { etag: ctx.record.mode === 'sync' ? cursor.etag : null });
    const batch = new PageBatch(ctx);
    if (response.status === 200) {
      batch.add({ type: 'protected_branch', key: name, data: response.data });
      batch.extra.push(clearFailureStep(ctx.db, ctx.importId, 'protected_branch', name));
    } else if (response.status !== 304) {
      batch.extra.push(recordFailureStep(ctx.db, ctx.importId, ctx.run, { type: 'protected_branch', id: name, error: `HTTP ${response.status}: ${messageOf(response.data)}` }, Date.now()));
    }
    await ctx.commit([...(await batch.steps()), writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true, etag: response.etag ?? cursor.etag, pages: cursor.pages + 1 }, Date.now())]);
  });
};

/**
 * Finish: what was deleted upstream (the large lists compared in full when
 * due, then the comments of issues that have more stored than GitHub
 * states), every user's profile (shared cache first), the git sources,
 * then the counts checked against GitHub's.
 */
const finish: StageRunner = async (ctx, env) => {
  await compareInFullWhenDue(ctx, env.reconcileIntervalMs);
  await dropDeletedComments(ctx);
  const now = Date.now();
  // Profiles cached and fresh are trusted (and their 24 h start again: refreshed on read).
  await ctx.commit([extendFreshProfilesStep(ctx.db, ctx.importId, ctx.record.apiUrl, now)]);
  const logins = await loginsToFetch(ctx.db, ctx.importId, ctx.record.apiUrl, now);
  await env.fanOut(ctx, 'finish', logins.map((login) => `user:${login}`));
  await env.waitSources(ctx);
  await reconcile(ctx);
};

/** The stages in order, and what each runs. */
export const STAGE_RUNNERS: Record<Stage, StageRunner> = {
  repository,
  base_data: baseData,
  pull_requests: pullRequests,
  collaborators,
  issues,
  events,
  notes,
  reviews,
  attachments,
  protected_branches: protectedBranches,
  finish,
};
