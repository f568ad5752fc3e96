/**
 * The writes to a feed's row that its runs make. Each function returns the
 * statement(s) unrun (Compilable): the runner runs them behind the feed's
 * lease fence, in one transaction with the guard (FeedRepository.fenced),
 * so a run that lost its lease writes nothing. Inputs are what the run
 * decided; the reasoning for each value stays with the run (runner.ts,
 * partial-sync.ts, full-sync.ts).
 */
import { sql, type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { FeedRecord, FeedRun } from './feeds.js';
import { deletePendingFromStep } from './pending.js';

/** How a run that failed (or was answered 410 Gone) is recorded. */
export interface RunFailure {
  /** Failed runs in a row, this one included. */
  failures: number;
  /** When the next run is due (ms). */
  retryAt: number;
  lastError: string | null;
  /** Set when the sink is disabled: why, and how to enable it again. */
  disabled?: string;
}

/** What a partial sync's pass moves on the feed's row. */
export interface PassRecord {
  cursor: number;
  /** Changes acknowledged in the pass (added to the feed's total). */
  delivered: number;
  failures: number;
  /** When the next run is due (ms); null: at once. */
  retryAt: number | null;
  /** A new last error; null clears it; undefined leaves it as it is. */
  lastError: string | null | undefined;
  /** Set when the sink answered 410 Gone. */
  disabled?: string;
}

/** Statement: stores how the feed's last run ended (`feed status`'s lastRun). */
export function lastRunStep(db: Kysely<Schema>, feedId: number, run: FeedRun): Compilable {
  return db.updateTable('feeds').set({ last_run: JSON.stringify(run) }).where('id', '=', feedId);
}

/**
 * Statements: a partial sync takes the requests it serves (a partial sync
 * asked for, a replay): they are cleared, and a replay moves the cursor back
 * to just before `replayFrom` and drops what is held back from there on
 * (it is delivered again in order).
 */
export function takeRequestsSteps(db: Kysely<Schema>, feed: Pick<FeedRecord, 'id' | 'cursor' | 'replayFrom'>): Compilable[] {
  const { id, cursor, replayFrom } = feed;
  return [
    db.updateTable('feeds').set({ partial_requested: 0, replay_from: null, ...(replayFrom !== null ? { cursor: Math.min(cursor, replayFrom - 1) } : {}) }).where('id', '=', id),
    ...(replayFrom !== null ? [deletePendingFromStep(db, id, { from: replayFrom })] : []),
  ];
}

/**
 * Statement: records a partial sync's pass. `pending_at` becomes the
 * earliest time a held-back change that heads its key is due (null when
 * nothing is held back), recomputed from `feed_pending` in the same
 * transaction as the pass's inserts and deletes there, so it always
 * matches them.
 */
export function recordPassStep(db: Kysely<Schema>, feedId: number, pass: PassRecord): Compilable {
  return db
    .updateTable('feeds')
    .set({
      cursor: pass.cursor,
      delivered: sql`delivered + ${pass.delivered}`,
      failures: pass.failures,
      retry_at: pass.retryAt,
      ...(pass.lastError !== undefined ? { last_error: pass.lastError } : {}),
      ...(pass.disabled !== undefined ? { disabled: pass.disabled } : {}),
      pending_at: sql`(select min(p.next_at) from feed_pending p where p.feed_id = ${feedId}
          and p.seq = (select min(q.seq) from feed_pending q where q.feed_id = p.feed_id and q.change_key = p.change_key))`,
    })
    .where('id', '=', feedId);
}

/** Statement: records a run that failed as a whole (a full sync's chunk not delivered): counts the failure, sets the backoff. */
export function runFailureStep(db: Kysely<Schema>, feedId: number, failure: RunFailure): Compilable {
  return db
    .updateTable('feeds')
    .set({
      failures: failure.failures,
      retry_at: failure.retryAt,
      last_error: failure.lastError,
      ...(failure.disabled !== undefined ? { disabled: failure.disabled } : {}),
    })
    .where('id', '=', feedId);
}

/**
 * Statements that begin a full sync at change `head`: the cursor moves up
 * to the head and what is held back at or below it is dropped (the state
 * exported covers those changes); the chunk position starts afresh.
 */
export function fullStartSteps(db: Kysely<Schema>, feed: Pick<FeedRecord, 'id' | 'cursor'>, head: number, now: Date): Compilable[] {
  return [
    deletePendingFromStep(db, feed.id, { upTo: head }),
    db
      .updateTable('feeds')
      .set({ full_started_at: now.getTime(), full_head: head, full_chunk: null, full_done: 0, cursor: Math.max(feed.cursor, head), pending_at: null })
      .where('id', '=', feed.id),
  ];
}

/**
 * Statement: records a delivered chunk of a full sync: its position
 * (`nextChunk`, JSON; null when `done`), the counts, and a clean slate of
 * failures; the last chunk also ends the full sync (its request included).
 */
export function fullChunkStep(db: Kysely<Schema>, feedId: number, chunk: { exported: number; nextChunk: string | null; done: boolean; now: number }): Compilable {
  return db
    .updateTable('feeds')
    .set({
      full_chunk: chunk.done ? null : chunk.nextChunk,
      full_done: sql`full_done + ${chunk.exported}`,
      delivered: sql`delivered + ${chunk.exported}`,
      failures: 0,
      retry_at: null,
      last_error: null,
      ...(chunk.done ? { full_started_at: null, full_head: null, full_requested_at: null } : {}),
      updated_at: chunk.now,
    })
    .where('id', '=', feedId);
}
