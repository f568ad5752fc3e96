import { sql, type Compilable, type Kysely } from 'kysely';
import { sqliteHandle } from './connect.js';
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

/** Rows per INSERT: 11 parameters each (10 when staged: no number yet). */
const CHUNK = 50;
const WIDTH = 11;
/** Staged changes numbered per statement by numberStagedChanges. */
const NUMBER_CHUNK = 5_000;

/** The change_log columns a writer fills, after `seq`. */
const CHANGE_COLUMNS = ['type', 'module', 'scope', 'change_key', 'subject', 'data', 'import_id', 'object_type', 'object_key', 'recorded_at'] as const;

/**
 * How changes get their numbers depends on the store, for one reason: the
 * numbers must follow commit order without gaps (a feed that has read
 * change n must never see one below it appear later), and only SQLite
 * already makes writers take turns.
 *
 * - SQLite: one writer at a time holds the write lock, so the writer
 *   numbers its own changes from `change_head` inside its transaction; the
 *   head row costs nothing there.
 * - PostgreSQL: writers run side by side, and a head row every appending
 *   transaction updated would make them commit one at a time, and a writer
 *   paused inside its transaction would hold every other (imports and syncs
 *   alike). So writers only stage their changes (`change_staged`, ids from
 *   a sequence: no lock, and no order promise across transactions), and
 *   readers number what has committed (numberStagedChanges) before they
 *   read: under the head row's lock, which only readers take, in id order.
 *   Changes of one key keep their order: whoever writes a key's object
 *   holds that object's row lock until commit, and stages after writing it,
 *   so a later writer of the key stages (takes its id) after the earlier
 *   one committed.
 */
type Numbering = 'by-writer' | 'by-reader';

const numberingOf = (db: Kysely<Schema>): Numbering => (sqliteHandle(db) ? 'by-writer' : 'by-reader');

interface Statements {
  reserve: PreparedQuery<[count: number], unknown>;
  inserts: Map<number, PreparedQuery<unknown[], unknown>>;
}

const statements = new WeakMap<Kysely<Schema>, Statements>();

function statementsOf(db: Kysely<Schema>): Statements {
  let found = statements.get(db);
  if (!found) {
    found = {
      /**
       * (by-writer) Inputs: how many numbers to take. Stores: change_head.seq
       * + count. Returns nothing. Comes after the write the changes
       * describe, late in its transaction.
       */
      reserve: prepared<[count: number], unknown>(db, (arg) => db.updateTable('change_head').set({ seq: sql`seq + ${arg(0)}` }).where('id', '=', 1)),
      inserts: new Map(),
    };
    statements.set(db, found);
  }
  return found;
}

/**
 * Inputs per row: (by-writer) its distance below the head just reserved,
 * then the columns. Stores: change_log rows numbered head - distance, so a
 * batch of n takes the n numbers the reserve step handed out, in order;
 * (by-reader) change_staged rows, numbered later. Returns nothing.
 */
function insertStatement(db: Kysely<Schema>, rows: number): PreparedQuery<unknown[], unknown> {
  const byCount = statementsOf(db).inserts;
  let statement = byCount.get(rows);
  if (statement) return statement;
  const byWriter = numberingOf(db) === 'by-writer';
  const width = byWriter ? WIDTH : WIDTH - 1;
  statement = prepared<unknown[], unknown>(db, (arg) => {
    const values = Array.from({ length: rows }, (_, row) => {
      const columns: Record<string, unknown> = {};
      if (byWriter) columns.seq = sql<number>`(select seq from change_head where id = 1) - ${arg(row * width)}`;
      CHANGE_COLUMNS.forEach((column, index) => (columns[column] = arg(row * width + index + (byWriter ? 1 : 0))));
      return columns as never;
    });
    return byWriter ? db.insertInto('change_log').values(values) : db.insertInto('change_staged').values(values);
  });
  byCount.set(rows, statement);
  return statement;
}

/**
 * The statements that append `changes` to the change log, in order: to be
 * run in the same transaction as the write they describe, after it (see
 * Numbering), as statements of a batch (batch.ts: yielded, or steps of a
 * guarded list). Empty when there is nothing to append.
 */
export function appendChanges(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs: number): BoundQuery[] {
  if (changes.length === 0) return [];
  const byWriter = numberingOf(db) === 'by-writer';
  const bound: BoundQuery[] = byWriter ? [statementsOf(db).reserve.with(changes.length)] : [];
  for (let start = 0; start < changes.length; start += CHUNK) {
    const chunk = changes.slice(start, start + CHUNK);
    const args: unknown[] = [];
    chunk.forEach((change, index) => {
      if (byWriter) args.push(changes.length - 1 - (start + index));
      args.push(
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

/** {@link appendChanges} as Compilables, for step lists typed so (an import's page: see importer/run/batch.ts). */
export function appendChangeSteps(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs: number): Compilable[] {
  return appendChanges(db, changes, nowMs).map(({ query, args }) => query.bind(...args));
}

/**
 * (by-reader) Numbers every staged change committed so far, in id order,
 * moving it into change_log; returns how many. Each round is one
 * transaction:
 * 1. lock change_head's row and read the last number handed out, h (other
 *    numberers wait here; writers never take this lock);
 * 2. in one statement, delete up to NUMBER_CHUNK staged rows, lowest ids
 *    first, and insert them into change_log as h+1, h+2, … in id order (the
 *    statement's snapshot is taken after the lock: it sees what an earlier
 *    numberer moved, and only what has committed);
 * 3. set the head to h + the rows moved.
 * A no-op (one indexed read, no transaction) when nothing is staged, and on
 * SQLite.
 */
export async function numberStagedChanges(db: Kysely<Schema>): Promise<number> {
  if (numberingOf(db) === 'by-writer') return 0;
  let numbered = 0;
  for (;;) {
    if (!(await db.selectFrom('change_staged').select('id').limit(1).executeTakeFirst())) return numbered;
    const moved = await db.transaction().execute(async (tx) => {
      const head = Number((await tx.selectFrom('change_head').select('seq').where('id', '=', 1).forUpdate().executeTakeFirstOrThrow()).seq);
      const columns = sql.join(CHANGE_COLUMNS.map((column) => sql.ref(column)));
      const result = await sql`
        with moved as (
          delete from change_staged
          where id in (select id from change_staged order by id limit ${NUMBER_CHUNK})
          returning *)
        insert into change_log (seq, ${columns})
        select ${head} + row_number() over (order by id), ${columns} from moved`.execute(tx);
      const count = Number(result.numAffectedRows ?? 0);
      if (count > 0) await tx.updateTable('change_head').set({ seq: head + count }).where('id', '=', 1).execute();
      return count;
    });
    numbered += moved;
    if (moved < NUMBER_CHUNK) return numbered;
  }
}

/** The last sequence number handed out (0 before the first change), after numbering what is staged. */
export async function headSeq(db: Kysely<Schema>): Promise<number> {
  await numberStagedChanges(db);
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
