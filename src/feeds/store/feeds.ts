/**
 * The `feeds` table: a feed's row as stored (FeedRecord), and the
 * FeedRepository that reads and writes it. Inputs: a feed's name or id,
 * what a user asked for, a run's lease fence. Stores the feed's settings,
 * cursor, requests and run bookkeeping; returns FeedRecords. Held-back
 * changes and dead letters live in store/pending.ts, the statements a run
 * writes behind its fence in store/run-steps.ts.
 */
import { sql, type Compilable, type Kysely, type Selectable } from 'kysely';
import { guardedList, run, runBatch } from '../../store/batch.js';
import type { FeedsTable } from '../../store/feed-tables.js';
import { fenceGuard } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';
import { FeedNameTakenError, FeedNotFoundError } from '../errors.js';
import type { FeedScope } from '../scope.js';
import { deadLetterRows, heldBackCounts, requeueDeadLetters, type DeadLetterRow, type HeldBackCounts } from './pending.js';

/** How a feed's last run ended (see runner.ts). */
export interface FeedRun {
  operation: 'partial sync' | 'full sync';
  startedAt: string;
  finishedAt: string;
  /** `delivered` (all due changes went out), `retrying` (some wait for a retry), `failed`, `lost` (the lease), `paused`, `disabled`. */
  outcome: string;
  delivered: number;
}

/** A feed as stored. */
export interface FeedRecord extends FeedScope {
  id: number;
  name: string;
  sink: string;
  /** The name of the feed secret it uses (see CredentialStore.feedSecretFor); never the secret. */
  secret: string | null;
  batch: number;
  paused: boolean;
  disabled: string | null;
  cursor: number;
  partialRequested: boolean;
  replayFrom: number | null;
  fullRequestedAt: Date | null;
  fullStartedAt: Date | null;
  fullHead: number | null;
  fullChunk: string | null;
  fullDone: number;
  skips: number;
  failures: number;
  retryAt: Date | null;
  pendingAt: Date | null;
  lastError: string | null;
  delivered: number;
  lastRun: FeedRun | null;
  createdAt: Date;
}

export interface NewFeed extends FeedScope {
  name: string;
  sink: string;
  secret: string | null;
  batch: number;
}

const date = (value: number | string | null): Date | null => (value === null ? null : new Date(Number(value)));
const num = (value: number | string | null): number | null => (value === null ? null : Number(value));

function toRecord(row: Selectable<FeedsTable>): FeedRecord {
  return {
    id: Number(row.id),
    name: row.name,
    sink: row.sink,
    types: row.types === null ? null : (JSON.parse(row.types) as string[]),
    sources: row.sources,
    secret: row.secret,
    batch: row.batch,
    paused: Boolean(row.paused),
    disabled: row.disabled,
    cursor: Number(row.cursor),
    partialRequested: Boolean(row.partial_requested),
    replayFrom: num(row.replay_from),
    fullRequestedAt: date(row.full_requested_at),
    fullStartedAt: date(row.full_started_at),
    fullHead: num(row.full_head),
    fullChunk: row.full_chunk,
    fullDone: Number(row.full_done),
    skips: Number(row.skips),
    failures: row.failures,
    retryAt: date(row.retry_at),
    pendingAt: date(row.pending_at),
    lastError: row.last_error,
    delivered: Number(row.delivered),
    lastRun: row.last_run === null ? null : (JSON.parse(row.last_run) as FeedRun),
    createdAt: new Date(Number(row.created_at)),
  };
}

/**
 * The feeds' rows. Writes a feed's runs make are fenced (see {@link fenced});
 * what users ask for (pause, a resync, a replay) is recorded as a request the
 * next run acts on, so it never races a run's own writes.
 */
export class FeedRepository {
  constructor(readonly db: Kysely<Schema>) {}

  /** @throws FeedNameTakenError */
  async create(feed: NewFeed, cursor: number, now: Date): Promise<FeedRecord> {
    if (await this.find(feed.name)) throw new FeedNameTakenError(feed.name);
    const ms = now.getTime();
    try {
      await this.db
        .insertInto('feeds')
        .values({
          name: feed.name,
          sink: feed.sink,
          types: feed.types === null ? null : JSON.stringify(feed.types),
          sources: feed.sources,
          secret: feed.secret,
          batch: feed.batch,
          cursor,
          // A new feed first hands its sink the current state of everything in scope.
          full_requested_at: ms,
          created_at: ms,
          updated_at: ms,
        })
        .execute();
    } catch (error) {
      if (await this.find(feed.name)) throw new FeedNameTakenError(feed.name);
      throw error;
    }
    return this.get(feed.name);
  }

  /** The feed named `name`, or undefined. */
  async find(name: string): Promise<FeedRecord | undefined> {
    const row = await this.db.selectFrom('feeds').selectAll().where('name', '=', name).executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  /** @throws FeedNotFoundError */
  async get(name: string): Promise<FeedRecord> {
    const feed = await this.find(name);
    if (!feed) throw new FeedNotFoundError(name);
    return feed;
  }

  async list(): Promise<FeedRecord[]> {
    const rows = await this.db.selectFrom('feeds').selectAll().orderBy('name').execute();
    return rows.map(toRecord);
  }

  /** Deletes the feed with its held-back and dead changes. @throws FeedNotFoundError */
  async remove(name: string): Promise<void> {
    const feed = await this.get(name);
    const db = this.db;
    await runBatch(db, function* () {
      yield* run(db.deleteFrom('feed_pending').where('feed_id', '=', feed.id));
      yield* run(db.deleteFrom('feed_dead_letters').where('feed_id', '=', feed.id));
      yield* run(db.deleteFrom('feeds').where('id', '=', feed.id));
    });
  }

  /** Records what a user asked of a feed (`paused`, a partial or full sync, a replay). @throws FeedNotFoundError */
  async request(name: string, change: { paused?: boolean; partial?: boolean; full?: boolean; replayFrom?: number }, now: Date): Promise<FeedRecord> {
    const values: Record<string, unknown> = { updated_at: now.getTime() };
    if (change.paused !== undefined) values.paused = change.paused ? 1 : 0;
    // Resuming also re-enables a sink that answered 410, and retries at once.
    if (change.paused === false) Object.assign(values, { disabled: null, retry_at: null, failures: 0 });
    // An explicit request is served at once, not after the feed's backoff.
    if (change.partial) Object.assign(values, { partial_requested: 1, retry_at: null });
    // Asked for while a full sync runs, it is that one: what it exported before the request is
    // brought up to date by the partial syncs, which deliver every change since it began.
    if (change.full) Object.assign(values, { full_requested_at: sql`coalesce(full_requested_at, ${now.getTime()})`, retry_at: null });
    if (change.replayFrom !== undefined) values.replay_from = change.replayFrom;
    const result = await this.db.updateTable('feeds').set(values).where('name', '=', name).executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) throw new FeedNotFoundError(name);
    return this.get(name);
  }

  /** Counts a run that found the lease taken, and keeps its request for after the holder. */
  async recordSkip(feedId: number, operation: 'partial sync' | 'full sync', now: Date): Promise<void> {
    await this.db
      .updateTable('feeds')
      .set({ skips: sql`skips + 1`, ...(operation === 'partial sync' ? { partial_requested: 1 } : {}), updated_at: now.getTime() })
      .where('id', '=', feedId)
      .execute();
  }

  /** Moves the feed's dead letters back to be delivered again (first try at once); returns how many. */
  async retryDeadLetters(feedId: number, now: Date): Promise<number> {
    return requeueDeadLetters(this.db, feedId, now);
  }

  /** The feed's dead letters, in order. */
  async deadLetters(feedId: number): Promise<DeadLetterRow[]> {
    return deadLetterRows(this.db, feedId);
  }

  /** The guard of a run's write: the row takes the lease's fence unless a newer holder wrote it. Returns the id when it may apply. */
  guard(feedId: number, fence: bigint, now: Date): Compilable {
    return this.db.updateTable('feeds').set({ fence, updated_at: now.getTime() }).where('id', '=', feedId).where(fenceGuard(fence)).returning('id');
  }

  /**
   * Runs `steps` behind the feed's fence guard in one transaction; false
   * (and nothing written) when the guard refused: a newer holder wrote the
   * feed, or it was removed.
   */
  async fenced(feedId: number, fence: bigint, steps: readonly (Compilable | null)[], now = new Date()): Promise<boolean> {
    return (await runBatch(this.db, guardedList({ guards: [this.guard(feedId, fence, now)], steps }))) !== null;
  }

  /** The fence the feed's row was last written with (see writeFenced). */
  async storedFence(feedId: number): Promise<bigint | null> {
    const row = await this.db.selectFrom('feeds').select(sql<string | null>`cast(fence as text)`.as('fence')).where('id', '=', feedId).executeTakeFirst();
    return row?.fence ? BigInt(row.fence) : null;
  }

  /** Changes held back (`feed_pending`) and dead, and the lowest number among those. */
  async heldCounts(feedId: number): Promise<HeldBackCounts> {
    return heldBackCounts(this.db, feedId);
  }

  /**
   * Names of the feeds that are neither paused nor disabled (a nudge runs
   * each of them). Read straight from the table, not as whole records:
   * a nudge comes with every recorded batch of changes.
   */
  async activeFeedNames(): Promise<string[]> {
    const rows = await this.db.selectFrom('feeds').select('name').where('paused', '=', 0).where('disabled', 'is', null).execute();
    return rows.map((row) => row.name);
  }

  /**
   * Records `message` as the feed's last error, outside any run's fence: a
   * run that threw never reached its own fenced bookkeeping, and the error
   * is shown by `feed status`. Unfenced on purpose (nothing else the row
   * holds is touched).
   */
  async recordRunError(name: string, message: string, now: Date): Promise<void> {
    await this.db.updateTable('feeds').set({ last_error: message, updated_at: now.getTime() }).where('name', '=', name).execute();
  }
}
