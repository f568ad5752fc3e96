import type BetterSqlite3 from 'better-sqlite3';
import type { Compilable, Kysely } from 'kysely';
import type { Schema } from './types.js';

/*
 * Why multi-statement writes do not use Kysely transactions on SQLite:
 * better-sqlite3 is synchronous, and by default the lease store shares the
 * registry's file through its own handle in the same process. A Kysely
 * transaction holds SQLite's write lock across `await`s; if a lease call on
 * the other handle runs in between, its busy wait blocks the event loop for
 * the whole busy_timeout (the transaction cannot finish meanwhile) and then
 * fails with SQLITE_BUSY. Running every statement of the batch synchronously
 * inside one BEGIN IMMEDIATE transaction never holds the lock across a yield.
 */

const sqliteHandles = new WeakMap<Kysely<Schema>, BetterSqlite3.Database>();

/** Records the better-sqlite3 handle behind `db` (done by openDatabase). */
export function registerSqliteHandle(db: Kysely<Schema>, handle: BetterSqlite3.Database): void {
  sqliteHandles.set(db, handle);
}

/** A row as the driver returns it. */
export type Row = Record<string, unknown>;

/** One statement of a batch, built from the rows the earlier statements returned; null skips it. */
export type Step = (previous: Row[][]) => Compilable | null;

/**
 * Runs the statements `steps` build, one after the other, in one
 * transaction, and returns the rows each returned. A step may throw to roll
 * the whole batch back. Steps build their queries with `db` (compiling only).
 */
export async function runAtomically(db: Kysely<Schema>, steps: Step[]): Promise<Row[][]> {
  const handle = sqliteHandles.get(db);
  if (handle) {
    const run = handle.transaction(() => {
      const results: Row[][] = [];
      for (const step of steps) {
        const query = step(results)?.compile();
        if (!query) {
          results.push([]);
          continue;
        }
        const statement = handle.prepare(query.sql);
        const parameters = query.parameters as unknown[];
        if (statement.reader) results.push(statement.all(parameters) as Row[]);
        else {
          statement.run(parameters);
          results.push([]);
        }
      }
      return results;
    });
    return run.immediate();
  }
  return db.transaction().execute(async (trx) => {
    const results: Row[][] = [];
    for (const step of steps) {
      const query = step(results)?.compile();
      results.push(query ? ((await trx.executeQuery(query)).rows as Row[]) : []);
    }
    return results;
  });
}
