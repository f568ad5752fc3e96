import type { Kysely } from 'kysely';
import type { Schema } from '../store/types.js';
import type { ServerPaths } from '../util/server-paths.js';
import { redactSinkUrl } from './sinks/open.js';
import type { FeedRecord, FeedRepository, FeedRun } from './store/feeds.js';
import { changeRecordedAt, changesInScopeAfter } from './store/status.js';

/** `feed status --json` (a contract: fields are only ever added). */
export interface FeedStatus {
  name: string;
  /** The sink URL with anything secret-looking redacted. */
  sink: string;
  types: string[] | null;
  sources: string | null;
  paused: boolean;
  /** Why the sink is disabled (it answered 410 Gone); null while enabled. */
  disabled: string | null;
  headSeq: number;
  /** Every change in scope up to this number is acknowledged. */
  ackedSeq: number;
  /** `changes` is 0 exactly when every change in scope has been acknowledged. */
  lag: { changes: number; oldestAgeS: number };
  lastRun: FeedRun | null;
  /** Who holds the feed's lease now, as `<operation>(<pid>)`; null when nobody does. */
  holder: string | null;
  skips: number;
  /** A partial sync was asked for (or skipped) and has not run since. */
  syncRequested: boolean;
  /** Changes that failed and wait for a retry. */
  retrying: number;
  deadLetters: number;
  fullSync: { requested: boolean; running: boolean; progress: { exported: number; head: number | null } };
  batch: number;
  /** The name of the feed secret it uses, if any (never the secret). */
  secret: string | null;
  delivered: number;
  lastError: string | null;
  retryAt: string | null;
}

/**
 * A feed's status, from its row, the change log (`head`: headSeq, read
 * before: it numbers what is staged, which the lag count must see; one read
 * serves a list of feeds) and the live holder of its lease.
 */
export async function feedStatus(db: Kysely<Schema>, repo: FeedRepository, of: { feed: FeedRecord; holder: string | null; head: number }): Promise<FeedStatus> {
  const { feed, holder, head } = of;
  const [held, after] = await Promise.all([
    repo.heldCounts(feed.id),
    changesInScopeAfter(db, feed, feed.cursor),
  ]);
  let oldest = after.oldest === null ? null : Number(after.oldest);
  if (held.oldestSeq !== null) {
    const recordedAt = await changeRecordedAt(db, held.oldestSeq);
    if (recordedAt !== undefined) oldest = Math.min(oldest ?? Infinity, Number(recordedAt));
  }
  const changes = Number(after.n) + held.pending + held.dead;
  return {
    name: feed.name,
    sink: redactSinkUrl(feed.sink),
    types: feed.types ? [...feed.types] : null,
    sources: feed.sources,
    paused: feed.paused,
    disabled: feed.disabled,
    headSeq: head,
    ackedSeq: held.oldestSeq !== null ? Math.min(feed.cursor, held.oldestSeq - 1) : changes === 0 ? head : feed.cursor,
    lag: { changes, oldestAgeS: changes === 0 || oldest === null ? 0 : Math.max(0, Math.round((Date.now() - oldest) / 1000)) },
    lastRun: feed.lastRun,
    holder,
    skips: feed.skips,
    syncRequested: feed.partialRequested || feed.replayFrom !== null,
    retrying: held.retrying,
    deadLetters: held.dead,
    fullSync: { requested: feed.fullRequestedAt !== null, running: feed.fullStartedAt !== null, progress: { exported: feed.fullDone, head: feed.fullHead } },
    batch: feed.batch,
    secret: feed.secret,
    delivered: feed.delivered,
    lastError: feed.lastError,
    retryAt: feed.retryAt?.toISOString() ?? null,
  };
}

/**
 * The status as the HTTP API answers it: the CLI's JSON with the server's
 * directories hidden (`file://<feedFiles>/orders`, `<dataDir>/…` in errors):
 * callers of the API have no business with where files lie on the server.
 */
export function feedStatusAnswer(status: FeedStatus, paths: ServerPaths): FeedStatus {
  return { ...status, sink: paths.hide(status.sink), disabled: paths.hide(status.disabled), lastError: paths.hide(status.lastError) };
}
