import { sql, type Compilable, type Kysely } from 'kysely';
import { prepared, type BoundQuery, type PreparedQuery } from './sql.js';
import type { Schema } from './types.js';

/** One change to append (see migration 007 for the columns). */
export interface ChangeInput {
  /** The CloudEvents type, e.g. `dev.forgesync.ref.updated`. */
  type: string;
  /** The module that made it: the CloudEvents source's middle segment. */
  module: 'replication' | 'importer';
  /** The source's or import's name. */
  scope: string;
  /** Changes of one key are delivered in order. */
  key: string;
  subject: string | null;
  /** The event's data, JSON-serialisable; for an imported object only `{ action, number }` (the object is read from its row when delivered). */
  data: unknown;
  /** An imported object: where its row is. */
  object?: { importId: number; type: string; key: string };
}

/** Rows per INSERT: 11 parameters each. */
const CHUNK = 50;
const WIDTH = 11;

const statements = new WeakMap<Kysely<Schema>, { reserve: PreparedQuery<[count: number], unknown>; inserts: Map<number, PreparedQuery<unknown[], unknown>> }>();

function statementsOf(db: Kysely<Schema>) {
  let found = statements.get(db);
  if (!found) {
    found = {
      /**
       * Inputs: how many numbers to take. Stores: change_head.seq + count.
       * Returns nothing. Comes after the write the changes describe, late in
       * its transaction, so that the head row (which every appending
       * transaction waits for) stays locked for as short a time as it can.
       */
      reserve: prepared<[count: number], unknown>(db, (arg) => db.updateTable('change_head').set({ seq: sql`seq + ${arg(0)}` }).where('id', '=', 1)),
      inserts: new Map(),
    };
    statements.set(db, found);
  }
  return found;
}

/**
 * Inputs per row: its distance below the head just reserved, then the
 * columns. Stores: change_log rows numbered head - distance, so a batch of
 * n takes the n numbers the reserve step handed out, in order. Returns nothing.
 */
function insertStatement(db: Kysely<Schema>, rows: number): PreparedQuery<unknown[], unknown> {
  const byCount = statementsOf(db).inserts;
  let statement = byCount.get(rows);
  if (!statement) {
    statement = prepared<unknown[], unknown>(db, (arg) =>
      db.insertInto('change_log').values(
        Array.from({ length: rows }, (_, row) => {
          const at = (column: number) => arg(row * WIDTH + column);
          return {
            seq: sql<number>`(select seq from change_head where id = 1) - ${at(0)}`,
            type: at(1),
            module: at(2),
            scope: at(3),
            change_key: at(4),
            subject: at(5),
            data: at(6),
            import_id: at(7),
            object_type: at(8),
            object_key: at(9),
            recorded_at: at(10),
          } as never;
        }),
      ),
    );
    byCount.set(rows, statement);
  }
  return statement;
}

/**
 * The statements that append `changes` to the change log, numbered in
 * order: to be run in the same transaction as the write they describe,
 * after it (see migration 007 for why the numbers then follow commit
 * order). Empty when there is nothing to append.
 */
export function appendChanges(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs: number): BoundQuery[] {
  if (changes.length === 0) return [];
  const bound: BoundQuery[] = [statementsOf(db).reserve.with(changes.length)];
  for (let start = 0; start < changes.length; start += CHUNK) {
    const chunk = changes.slice(start, start + CHUNK);
    const args: unknown[] = [];
    chunk.forEach((change, index) => {
      args.push(
        changes.length - 1 - (start + index),
        change.type,
        change.module,
        change.scope,
        change.key,
        change.subject,
        change.data === null || change.data === undefined ? null : JSON.stringify(change.data),
        change.object?.importId ?? null,
        change.object?.type ?? null,
        change.object?.key ?? null,
        nowMs,
      );
    });
    bound.push(insertStatement(db, chunk.length).with(...args));
  }
  return bound;
}

/** {@link appendChanges} as steps of runAtomically or runGuarded. */
export function appendChangeSteps(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs: number): Compilable[] {
  return appendChanges(db, changes, nowMs).map(({ query, args }) => query.bind(...args));
}

/** The last sequence number handed out (0 before the first change). */
export async function headSeq(db: Kysely<Schema>): Promise<number> {
  const row = await db.selectFrom('change_head').select('seq').where('id', '=', 1).executeTakeFirst();
  return Number(row?.seq ?? 0);
}

/** The CloudEvents type of a ref change. */
export type RefChangeType = 'created' | 'updated' | 'deleted';

/** One ref moved by a sync. */
export interface RefChange {
  ref: string;
  before: string | null;
  after: string | null;
  /** The new commit does not descend from the old one (a force push). */
  forced: boolean;
}

/** The change log entry of a ref change on source `source`. */
export function refChange(source: string, change: RefChange): ChangeInput {
  const kind: RefChangeType = change.before === null ? 'created' : change.after === null ? 'deleted' : 'updated';
  return {
    type: `dev.forgesync.ref.${kind}`,
    module: 'replication',
    scope: source,
    key: `${source} ${change.ref}`,
    subject: change.ref,
    data: { source, ref: change.ref, before: change.before, after: change.after, forced: change.forced },
  };
}

/** The change log entry of a source's state change (`synced` ⇄ `failed`). */
export function sourceStateChange(source: string, state: string, previous: string | null, error: string | null): ChangeInput {
  return { type: 'dev.forgesync.source.state', module: 'replication', scope: source, key: source, subject: null, data: { source, state, previous, error } };
}
