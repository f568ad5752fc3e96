import { sql, type Compilable, type Kysely } from 'kysely';
import { prepared, type PreparedQuery } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';

/*
 * The objects webhooks named, waiting to be fetched again (migration 023:
 * one row per import and target, deliveries for the same object coalescing
 * into it, `seq` counting them).
 */

/** One waiting refresh. */
export interface WaitingRefresh {
  target: string;
  /** Deliveries recorded for it so far: the refresh that read this many removes it (finishRefreshStep). */
  seq: number;
  /** The latest delivery's hint, JSON. */
  detail: string;
  /** When the first delivery still waiting came (ms). */
  requestedAt: number;
  /** When the latest came (ms). */
  lastAt: number;
}

/** Rows per INSERT: 5 parameters each. */
const CHUNK = 200;

/**
 * Inputs: (import, target, detail JSON) rows, each (import, target) once,
 * and now. Stores a waiting refresh per row; one already waiting gets
 * seq + 1, the new detail and last_at, and keeps its requested_at (its
 * first delivery still waits). Returns nothing.
 */
export function recordRefreshesSteps(db: Kysely<Schema>, rows: readonly { importId: number; target: string; detail: string }[], now: number): Compilable[] {
  const steps: Compilable[] = [];
  for (let start = 0; start < rows.length; start += CHUNK) {
    const values = rows.slice(start, start + CHUNK).map((row) => ({ import_id: row.importId, target: row.target, seq: 1, detail: row.detail, requested_at: now, last_at: now }));
    steps.push(
      db
        .insertInto('import_refreshes')
        .values(values)
        .onConflict((oc) => oc.columns(['import_id', 'target']).doUpdateSet({ seq: sql`import_refreshes.seq + 1`, detail: sql`excluded.detail`, last_at: sql`excluded.last_at` })),
    );
  }
  return steps;
}

/** The statements a refresh runs again and again, compiled once per database (see prepared). */
interface Statements {
  /** Inputs: import, how many. Returns its waiting rows, the longest waiting first. */
  waiting: PreparedQuery<[importId: number, limit: number], { target: string; seq: number; detail: string; requested_at: number; last_at: number }>;
  /** Inputs: import. Returns a row when anything waits. */
  any: PreparedQuery<[importId: number], { one: number }>;
  /** Inputs: import, target, seq. Deletes that waiting row if its seq is still that. */
  finish: PreparedQuery<[importId: number, target: string, seq: number], unknown>;
}

const statements = new WeakMap<Kysely<Schema>, Statements>();

function statementsOf(db: Kysely<Schema>): Statements {
  let found = statements.get(db);
  if (!found) {
    found = {
      waiting: prepared(db, (arg) =>
        db
          .selectFrom('import_refreshes')
          .select(['target', 'seq', 'detail', 'requested_at', 'last_at'])
          .where('import_id', '=', arg(0))
          .orderBy('requested_at')
          .limit(arg(1)),
      ),
      any: prepared(db, (arg) => db.selectFrom('import_refreshes').select(sql<number>`1`.as('one')).where('import_id', '=', arg(0)).limit(1)),
      finish: prepared(db, (arg) => db.deleteFrom('import_refreshes').where('import_id', '=', arg(0)).where('target', '=', arg(1)).where('seq', '=', arg(2))),
    };
    statements.set(db, found);
  }
  return found;
}

/** Inputs: the import, how many. Returns its waiting refreshes, the longest waiting first. */
export async function waitingRefreshes(db: Kysely<Schema>, importId: number, limit: number): Promise<WaitingRefresh[]> {
  const { rows } = await statementsOf(db).waiting.execute(importId, limit);
  return rows.map((row) => ({ target: row.target, seq: Number(row.seq), detail: row.detail, requestedAt: Number(row.requested_at), lastAt: Number(row.last_at) }));
}

/** Inputs: the import. Returns whether any refresh of it waits. */
export async function anyRefreshWaiting(db: Kysely<Schema>, importId: number): Promise<boolean> {
  return (await statementsOf(db).any.execute(importId)).rows.length > 0;
}

/**
 * Inputs: the import, a target and the seq its refresh read. Removes the
 * waiting row only if no delivery came since (seq unchanged): one that
 * came meanwhile may describe a change the refresh's answer predates, and
 * its row stays for another refresh. Returns nothing.
 */
export function finishRefreshStep(db: Kysely<Schema>, importId: number, refresh: Pick<WaitingRefresh, 'target' | 'seq'>): Compilable {
  return statementsOf(db).finish.bind(importId, refresh.target, refresh.seq);
}

/** Inputs: the import. Returns how many refreshes wait and since when the oldest does (ms, null when none). */
export async function refreshBacklog(db: Kysely<Schema>, importId: number): Promise<{ waiting: number; oldestAt: number | null }> {
  const row = await db
    .selectFrom('import_refreshes')
    .select([sql<number>`count(*)`.as('waiting'), sql<number | null>`min(requested_at)`.as('oldest')])
    .where('import_id', '=', importId)
    .executeTakeFirst();
  return { waiting: Number(row?.waiting ?? 0), oldestAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
}

/** Returns the imports with refreshes waiting (the scheduler nudges those no one works on). */
export async function importsWithRefreshes(db: Kysely<Schema>): Promise<number[]> {
  const rows = await db.selectFrom('import_refreshes').select('import_id').distinct().execute();
  return rows.map((row) => Number(row.import_id));
}

/**
 * Inputs: GitHub's id of a repository. Returns the imports of it that are
 * not cancelled (id, name), by the repository row their first stage stored
 * (its `number` is the id: migration 021): for each import (few) one probe
 * of its repository row by the primary key, never a scan of the objects
 * (many; a join would let the planner start from them).
 */
export async function importsOfRepository(db: Kysely<Schema>, repositoryId: number): Promise<{ id: number; name: string }[]> {
  const rows = await db
    .selectFrom('imports')
    .select(['imports.id', 'imports.name'])
    .where('imports.state', '<>', 'cancelled')
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('import_objects')
          .select(sql`1`.as('one'))
          .whereRef('import_objects.import_id', '=', 'imports.id')
          .where('import_objects.type', '=', 'repository')
          .where('import_objects.key', '=', 'repository')
          .where('import_objects.number', '=', repositoryId),
      ),
    )
    .execute();
  return rows.map((row) => ({ id: Number(row.id), name: row.name }));
}
