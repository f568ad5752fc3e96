/**
 * A feed's held-back changes (`feed_pending`: failed, or waiting behind a
 * failed change of the same key) and its dead letters (`feed_dead_letters`:
 * failed `maxAttempts` times). Rows name a change by its number and key;
 * the change itself stays in the change log (store/changes.ts). Reads
 * return plain rows; the writes a run makes are returned as statements
 * (Compilable) to run behind the feed's fence (FeedRepository.fenced).
 */
import { sql, type Compilable, type Kysely } from 'kysely';
import { run, runBatch } from '../../store/batch.js';
import type { Schema } from '../../store/types.js';

/** A held-back or dead change as a run records it. */
export interface HeldRow {
  seq: number;
  key: string;
  attempts: number;
  /** When it is next due (ms); 0 for at once. */
  nextAt: number;
  error: string | null;
}

export interface DeadLetterRow {
  seq: number;
  key: string;
  attempts: number;
  lastError: string | null;
}

export interface HeldBackCounts {
  pending: number;
  /** Held back after failing at least once (the rest wait behind one that did). */
  retrying: number;
  dead: number;
  /** The lowest change number held back or dead; null when there is none. */
  oldestSeq: number | null;
}

/** Rows inserted per statement (keeps each under the drivers' parameter limits). */
const INSERT_CHUNK = 200;

/**
 * Held-back changes of feed `feedId` due at `now` (ms) that head their key
 * (the lowest number of the key still held), at most `limit`, in order.
 * Only a key's head is retried: its later changes must not overtake it.
 */
export async function dueHeads(db: Kysely<Schema>, feedId: number, now: number, limit: number): Promise<{ seq: number; attempts: number }[]> {
  const rows = await db
    .selectFrom('feed_pending as p')
    .select(['p.seq', 'p.attempts'])
    .where('p.feed_id', '=', feedId)
    .where('p.next_at', '<=', now)
    .where('p.seq', '=', (eb) => eb.selectFrom('feed_pending as q').select(sql<number>`min(q.seq)`.as('m')).whereRef('q.feed_id', '=', 'p.feed_id').whereRef('q.change_key', '=', 'p.change_key'))
    .orderBy('p.seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ seq: Number(row.seq), attempts: row.attempts }));
}

/** The keys feed `feedId` holds changes back for: a new change of such a key waits behind them. */
export async function heldKeys(db: Kysely<Schema>, feedId: number): Promise<Set<string>> {
  const rows = await db.selectFrom('feed_pending').select('change_key').distinct().where('feed_id', '=', feedId).execute();
  return new Set(rows.map((row) => row.change_key));
}

/** Statement: forgets the held-back changes numbered `seqs` (acknowledged now, or about to be recorded again with more attempts). */
export function deletePendingStep(db: Kysely<Schema>, feedId: number, seqs: readonly number[]): Compilable {
  return db.deleteFrom('feed_pending').where('feed_id', '=', feedId).where('seq', 'in', [...seqs]);
}

/**
 * Statement: forgets the held-back changes numbered `from` and above (a
 * replay delivers them again, in order) or at most `upTo` (the state a
 * full sync exports covers them).
 */
export function deletePendingFromStep(db: Kysely<Schema>, feedId: number, range: { from: number } | { upTo: number }): Compilable {
  const query = db.deleteFrom('feed_pending').where('feed_id', '=', feedId);
  return 'from' in range ? query.where('seq', '>=', range.from) : query.where('seq', '<=', range.upTo);
}

/**
 * Statements: inserts `rows` into `feed_pending` or `feed_dead_letters`, in
 * chunks of INSERT_CHUNK; a change the table has already is left as it is
 * (its attempts are counted by the row there).
 */
export function insertHeldSteps(db: Kysely<Schema>, table: 'feed_pending' | 'feed_dead_letters', feedId: number, rows: readonly HeldRow[]): Compilable[] {
  const steps: Compilable[] = [];
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const chunk = rows.slice(start, start + INSERT_CHUNK).map((row) => ({ feed_id: feedId, seq: row.seq, change_key: row.key, attempts: row.attempts, next_at: row.nextAt, last_error: row.error }));
    steps.push(db.insertInto(table).values(chunk).onConflict((oc) => oc.columns(['feed_id', 'seq']).doNothing()));
  }
  return steps;
}

/**
 * Moves feed `feedId`'s dead letters back to `feed_pending` (attempts 0, due
 * at once) and asks for a partial sync, in one transaction; returns how
 * many moved. A change already held back keeps its row.
 */
export async function requeueDeadLetters(db: Kysely<Schema>, feedId: number, now: Date): Promise<number> {
  return runBatch(db, function* () {
    const moved = yield* run(
      db
        .insertInto('feed_pending')
        .columns(['feed_id', 'seq', 'change_key', 'attempts', 'next_at', 'last_error'])
        .expression((eb) => eb.selectFrom('feed_dead_letters').select(['feed_id', 'seq', 'change_key', sql.lit(0).as('attempts'), sql.lit(0).as('next_at'), 'last_error']).where('feed_id', '=', feedId))
        .onConflict((oc) => oc.columns(['feed_id', 'seq']).doNothing())
        .returning('seq'),
    );
    yield* run(db.deleteFrom('feed_dead_letters').where('feed_id', '=', feedId));
    yield* run(db.updateTable('feeds').set({ partial_requested: 1, pending_at: 0, updated_at: now.getTime() }).where('id', '=', feedId));
    return moved.rows.length;
  });
}

/** Feed `feedId`'s dead letters, in order of their change numbers. */
export async function deadLetterRows(db: Kysely<Schema>, feedId: number): Promise<DeadLetterRow[]> {
  const rows = await db.selectFrom('feed_dead_letters').selectAll().where('feed_id', '=', feedId).orderBy('seq').execute();
  return rows.map((row) => ({ seq: Number(row.seq), key: row.change_key, attempts: row.attempts, lastError: row.last_error }));
}

/** How many changes feed `feedId` holds back (and how many of those failed) and keeps dead, and the lowest number among them (for `feed status`'s lag). */
export async function heldBackCounts(db: Kysely<Schema>, feedId: number): Promise<HeldBackCounts> {
  const [pending, dead] = await Promise.all(
    (['feed_pending', 'feed_dead_letters'] as const).map((table) =>
      db
        .selectFrom(table)
        .select([sql<number>`count(*)`.as('n'), sql<number>`sum(case when attempts > 0 then 1 else 0 end)`.as('failed'), sql<number | null>`min(seq)`.as('oldest')])
        .where('feed_id', '=', feedId)
        .executeTakeFirstOrThrow(),
    ),
  );
  const oldest = [pending!.oldest, dead!.oldest].filter((value) => value !== null).map(Number);
  return { pending: Number(pending!.n), retrying: Number(pending!.failed ?? 0), dead: Number(dead!.n), oldestSeq: oldest.length > 0 ? Math.min(...oldest) : null };
}
