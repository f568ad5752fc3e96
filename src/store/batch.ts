import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import { runOnSqlite, sqliteHandle, type SqliteHandle } from './connect.js';
import type { BoundQuery, PreparedQuery } from './sql.js';
import type { WriteList } from './sqlite-writer.js';
import type { Schema } from './types.js';

/*
 * The one way to write several statements together: runBatch.
 *
 * Inputs: the database, and a batch: a generator function that yields its
 * statements one at a time through `yield* run(…)` (a prepared query with
 * its arguments, or any Kysely query) and `yield* guard(…)`, deciding what
 * comes next from the results it gets back. Options: `atomic` (default
 * true) says whether the batch must commit as a whole on PostgreSQL.
 * A guarded write known in full before it runs (guards, then statements
 * whose results nobody reads) is written with guardedList, which runBatch
 * may send to the SQLite writer thread.
 *
 * Returns what the batch returns; or null when a guard refused it: a guard
 * is an UPDATE … RETURNING that returns a row only when the write may apply
 * (a fence, a run, a state), and when it returns none nothing of the batch
 * is kept (what writeFenced expects of a refused write). A batch that
 * yields no guard cannot be refused, and its type says so (no null).
 * A failing statement, or a batch that throws, rejects: nothing is kept
 * (on PostgreSQL without `atomic`, what ran before it is).
 *
 * Why it runs the way it does:
 * - SQLite: synchronously, every statement inside one BEGIN IMMEDIATE
 *   transaction on the better-sqlite3 handle, never a Kysely transaction.
 *   better-sqlite3 is synchronous, and by default the lease store shares
 *   the registry's file through its own handle in the same process. A
 *   Kysely transaction holds SQLite's write lock across `await`s; if a
 *   lease call on the other handle runs in between, its busy wait blocks
 *   the event loop for the whole busy_timeout (the transaction cannot
 *   finish meanwhile) and then fails with SQLITE_BUSY. A batch run in one
 *   synchronous call never holds the lock across a yield, and costs one
 *   lock and one WAL commit instead of one per statement. So a batch is
 *   atomic on SQLite whatever `atomic` says (but see the next-but-one case).
 * - SQLite, a guarded list with many parameters (an import's page: about
 *   ten stored objects and more): the same transaction on the database's
 *   writer thread (sqlite-writer.ts), so that SQLite's share of the write
 *   runs on another core. A small one (a job's answer, a cursor) is
 *   cheaper to write here than to send. Only lists go there: a generator
 *   that reads its results would cost a thread round trip per statement.
 * - SQLite while a Kysely transaction holds the connection (nothing in
 *   forgesync opens one there today): through Kysely, which waits for that
 *   transaction to end (as PreparedQuery.execute does), in a transaction
 *   of its own when atomic, statement by statement when not.
 * - PostgreSQL, atomic: one transaction, so that a write and what must go
 *   with it (the changes it appends to the change log, the attempt it
 *   ends, its guards) commit together or not at all.
 * - PostgreSQL, `atomic: false`: each statement on its own through the
 *   pool, as separate calls would be; a transaction would cost two more
 *   round trips where nothing needs one. A guard needs a transaction to
 *   roll back, so a guard in such a batch is an error (on SQLite too, so
 *   that the mistake shows in every test).
 */

/** A row as the driver returns it. */
export type Row = Record<string, unknown>;

/** One statement of a batch: a prepared query with its arguments, or any Kysely query. */
export type Statement = BoundQuery | Compilable;

/** What guard() yields: a statement that must return a row, or the whole batch is refused. */
export class Guard {
  constructor(readonly statement: Statement) {}
}

/** A batch whose statements guard nothing: runBatch returns what it returns. */
export type Batch<T> = Generator<Statement, T, QueryResult<unknown>>;

/** A batch with guards: runBatch returns what it returns, or null when a guard refused it. */
export type GuardedBatch<T> = Generator<Statement | Guard, T, QueryResult<unknown>>;

/** See the top of this file. */
export interface BatchOptions {
  /** On PostgreSQL, one transaction (default); false: each statement on its own. SQLite is atomic either way. */
  atomic?: boolean;
}

/** A guard in a batch run with `atomic: false`: it could not roll back what ran before it. */
export class GuardWithoutTransactionError extends Error {
  constructor() {
    super('a batch with guards must run atomically: remove `atomic: false`');
    this.name = new.target.name;
  }
}

/** Inside a batch: `const { rows } = yield* run(prepared, ...args)` or `yield* run(db.updateTable(…)…)`. */
export function run<O>(query: Compilable<O>): Generator<Statement, QueryResult<O>, QueryResult<unknown>>;
export function run<A extends readonly unknown[], O>(query: PreparedQuery<A, O>, ...args: A): Generator<Statement, QueryResult<O>, QueryResult<unknown>>;
export function* run(query: Compilable | PreparedQuery<readonly unknown[], unknown>, ...args: unknown[]): Generator<Statement, QueryResult<unknown>, QueryResult<unknown>> {
  return yield statementOf(query, args);
}

/**
 * Inside a batch: runs `query`, an UPDATE … RETURNING, and refuses the
 * whole batch (nothing kept, runBatch returns null) when it returns no row.
 * Returns its result when it did.
 */
export function guard<O>(query: Compilable<O>): Generator<Guard, QueryResult<O>, QueryResult<unknown>>;
export function guard<A extends readonly unknown[], O>(query: PreparedQuery<A, O>, ...args: A): Generator<Guard, QueryResult<O>, QueryResult<unknown>>;
export function* guard(query: Compilable | PreparedQuery<readonly unknown[], unknown>, ...args: unknown[]): Generator<Guard, QueryResult<unknown>, QueryResult<unknown>> {
  return yield new Guard(statementOf(query, args));
}

/** The batches guardedList made, with their statements as the writer thread takes them. */
const writeLists = new WeakMap<() => unknown, WriteList>();

/**
 * A batch of `guards` (each must return a row, see guard) and then `steps`
 * (null ones skipped), whose results nobody reads. runBatch returns true
 * when it committed, null when a guard refused it; on a SQLite file a large
 * one runs on the writer thread. Compiled here, once, whichever connection
 * runs it.
 */
export function guardedList(list: { guards: readonly Statement[]; steps: readonly (Statement | null)[] }): () => GuardedBatch<true> {
  const compiled: WriteList = {
    guards: list.guards.map(compile),
    steps: list.steps.flatMap((step) => (step ? [compile(step)] : [])),
  };
  const batch = function* (): GuardedBatch<true> {
    for (const query of compiled.guards) yield new Guard({ compile: () => query });
    for (const query of compiled.steps) yield { compile: () => query };
    return true;
  };
  writeLists.set(batch, compiled);
  return batch;
}

/** Parameters from which a guarded list goes to the writer thread: about ten stored objects. */
const OFF_THREAD_PARAMETERS = 120;

/** Runs `batch`: see the top of this file. */
export async function runBatch<Y extends Statement | Guard, T>(
  db: Kysely<Schema>,
  batch: () => Generator<Y, T, QueryResult<unknown>>,
  options: BatchOptions = {},
): Promise<Guard extends Y ? T | null : T> {
  type Result = Guard extends Y ? T | null : T;
  const atomic = options.atomic ?? true;
  const sqlite = sqliteHandle(db);
  const list = writeLists.get(batch);
  if (list && sqlite?.writer && parameterCount(list.steps) >= OFF_THREAD_PARAMETERS) {
    return ((await sqlite.writer.write(list)) === 'committed' ? true : null) as Result;
  }
  try {
    if (sqlite && !sqlite.raw.inTransaction) {
      return sqlite.transaction.immediate(() => driveOnSqlite(sqlite, batch(), atomic)) as Result;
    }
    if (atomic) {
      return (await db.transaction().execute((trx) => drive(batch(), { atomic, execute: (statement) => trx.executeQuery(compile(statement)) }))) as Result;
    }
    return (await drive(batch(), { atomic, execute: (statement) => executeAlone(db, statement) })) as Result;
  } catch (error) {
    if (error instanceof Refused) return null as Result;
    throw error;
  }
}

/** Thrown inside a batch's transaction when a guard returned no row: it rolls the batch back. */
class Refused extends Error {}

/** Runs the batch on the SQLite handle, synchronously: no `await`, so no yield while the lock is held. */
function driveOnSqlite<T>(sqlite: SqliteHandle, steps: Generator<Statement | Guard, T, QueryResult<unknown>>, atomic: boolean): T {
  for (let step = steps.next(); ; ) {
    if (step.done) return step.value;
    const statement = unwrap(step.value, atomic);
    const result = isBound(statement) ? statement.query.runSqlite(sqlite, statement.args) : runCompiledOnSqlite(sqlite, statement.compile());
    step = steps.next(checked(step.value, result));
  }
}

/** Runs the batch through Kysely, a statement at a time, with `execute`. */
async function drive<T>(
  steps: Generator<Statement | Guard, T, QueryResult<unknown>>,
  how: { atomic: boolean; execute: (statement: Statement) => Promise<QueryResult<unknown>> },
): Promise<T> {
  for (let step = steps.next(); ; ) {
    if (step.done) return step.value;
    const result = await how.execute(unwrap(step.value, how.atomic));
    step = steps.next(checked(step.value, result));
  }
}

/** One statement on its own (no transaction): a prepared query the way it runs alone, anything else through Kysely. */
function executeAlone(db: Kysely<Schema>, statement: Statement): Promise<QueryResult<unknown>> {
  return isBound(statement) ? statement.query.execute(...statement.args) : db.executeQuery(statement.compile());
}

/** The statement to run for what the batch yielded. */
function unwrap(step: Statement | Guard, atomic: boolean): Statement {
  if (!isGuard(step)) return step;
  if (!atomic) throw new GuardWithoutTransactionError();
  return step.statement;
}

/** `result`, unless `step` is a guard that returned no row: then the batch is refused. */
function checked(step: Statement | Guard, result: QueryResult<unknown>): QueryResult<unknown> {
  if (isGuard(step) && result.rows.length === 0) throw new Refused();
  return result;
}

function isGuard(step: Statement | Guard): step is Guard {
  return step instanceof Guard;
}

function isBound(statement: Statement): statement is BoundQuery {
  return typeof (statement as Partial<Compilable>).compile !== 'function';
}

function statementOf(query: Compilable | PreparedQuery<readonly unknown[], unknown>, args: readonly unknown[]): Statement {
  return 'compile' in query ? query : query.with(...args);
}

function compile(statement: Statement): CompiledQuery {
  return isBound(statement) ? statement.query.bind(...statement.args).compile() : statement.compile();
}

function runCompiledOnSqlite(sqlite: SqliteHandle, query: CompiledQuery): QueryResult<unknown> {
  return runOnSqlite(sqlite, query.sql, query.parameters);
}

function parameterCount(queries: readonly CompiledQuery[]): number {
  return queries.reduce((sum, query) => sum + query.parameters.length, 0);
}
