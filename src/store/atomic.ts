import type { Compilable, Kysely } from 'kysely';
import { runOnSqlite, sqliteHandle } from './connect.js';
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
  const handle = sqliteHandle(db);
  if (handle) {
    return handle.transaction.immediate(() => {
      const results: Row[][] = [];
      for (const step of steps) {
        const query = step(results)?.compile();
        results.push(query ? runOnSqlite<Row>(handle, query.sql, query.parameters).rows : []);
      }
      return results;
    }) as Row[][];
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
