import { PostgresAdapter, sql, type Compilable, type Kysely } from 'kysely';
import { prepared, type PreparedQuery } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';
import type { ImportState } from '../../store/import-tables.js';

/** The states in which an import's copy is refreshed between runs (a started one is refreshed by its run, a cancelled one not at all). */
const REFRESHABLE: ImportState[] = ['synced', 'failed', 'pending'];

/** Which coordinator batch a guard admits: import, run, the holder's fence and how it holds the row (see ImportGuards.coordinator). */
export interface CoordinatorGuard {
  importId: number;
  run: number;
  fence: bigint;
  hold: 'share' | 'take';
  now?: number;
}

/**
 * The guards an import's batches write behind (see ImportRepository): a
 * batch's first step, refused (no row) unless the import still runs the
 * batch's run and, for the coordinator, its stored fence is not above the
 * batch's. They compare, holding the row in share mode (PostgreSQL's FOR
 * SHARE; SQLite runs one write transaction at a time), so batches never
 * wait for each other; only taking the fence writes the row.
 */
export class ImportGuards {
  /**
   * The guards pages and jobs write behind, compiled once (see
   * PreparedQuery). Inputs: the import id, the run, and (the coordinator's
   * guard) its fence. They store nothing and hold the row in share
   * mode; they return the id when the import runs that run (and the stored
   * fence is not above the coordinator's).
   */
  readonly #guard: PreparedQuery<[id: number, run: number, fence: bigint], { id: number }>;
  readonly #jobGuard: PreparedQuery<[id: number, run: number], { id: number }>;
  /**
   * The guard that takes the fence (a coordinator's first batch, one after
   * its fence was raised, one that changes the row). Inputs: fence, now, id,
   * run. Stores the fence. Returns the id when it applied.
   */
  readonly #takeFence: PreparedQuery<[fence: bigint, now: number, id: number, run: number], { id: number }>;
  /**
   * The guard of a refresh between runs (see ImportGuards.refresh). Inputs:
   * fence, now, id. Stores the fence. Returns the id when it applied.
   */
  readonly #refresh: PreparedQuery<[fence: bigint, now: number, id: number], { id: number }>;

  constructor(db: Kysely<Schema>) {
    // SQLite has no row locks (and no FOR SHARE): its write transactions run one at a time.
    const shared = db.getExecutor().adapter instanceof PostgresAdapter;
    this.#guard = prepared(db, (arg) =>
      db
        .selectFrom('imports')
        .select('id')
        .where('id', '=', arg(0))
        .where('run', '=', arg(1))
        .where('state', '=', 'started')
        .where(sql<boolean>`(fence is null or fence <= ${arg(2)})`)
        .$if(shared, (query) => query.forShare()),
    );
    this.#jobGuard = prepared(db, (arg) =>
      db
        .selectFrom('imports')
        .select('id')
        .where('id', '=', arg(0))
        .where('run', '=', arg(1))
        .where('state', '=', 'started')
        .$if(shared, (query) => query.forShare()),
    );
    this.#takeFence = prepared(db, (arg) =>
      db
        .updateTable('imports')
        .set({ fence: arg(0) as bigint, updated_at: arg(1) as number })
        .where('id', '=', arg(2) as number)
        .where('run', '=', arg(3) as number)
        .where('state', '=', 'started')
        .where(sql<boolean>`(fence is null or fence <= ${arg(0)})`)
        .returning('id'),
    );
    this.#refresh = prepared(db, (arg) =>
      db
        .updateTable('imports')
        .set({ fence: arg(0) as bigint, updated_at: arg(1) as number })
        .where('id', '=', arg(2) as number)
        .where('state', 'in', REFRESHABLE)
        .where(sql<boolean>`(fence is null or fence <= ${arg(0)})`)
        .returning('id'),
    );
  }

  /**
   * The guard of a coordinator's batch, its first step: applies only while
   * the import runs run `run` and the row's fence is not above `fence`.
   * `hold`: `share` compares (the row already has this fence), holding the
   * row in share mode with every other batch in flight; `take` also stores
   * the fence, holding the row alone until the batch commits: a holder's
   * first batch, its first after its fence was raised, and any batch that
   * updates the import's row itself (taking the row first, rather than
   * upgrading a share lock two batches could both hold, which deadlocks).
   * Returns the id when it applied (no row: refused, and the batch must roll back).
   */
  coordinator(guard: CoordinatorGuard): Compilable {
    const { importId, run, fence, hold, now = Date.now() } = guard;
    return hold === 'take' ? this.#takeFence.bind(fence, now, importId, run) : this.#guard.bind(importId, run, fence);
  }

  /**
   * The guard of a per-object job's write: the import must still be running
   * run `run` (a cancel or a new run stops it); the job's own lease fence is
   * checked on its import_jobs row. Holds the row in share mode, like a
   * coordinator's batch: jobs never wait for each other here.
   */
  job(id: number, run: number): Compilable {
    return this.#jobGuard.bind(id, run);
  }

  /**
   * The guard of a webhook refresh's write while no run goes on (the
   * import synced, failed, or waiting for its next run), under the
   * import's lease: its fence must not be below the stored one, which it
   * stores. A run's refreshes write behind the coordinator's guard.
   */
  refresh(id: number, fence: bigint, now = Date.now()): Compilable {
    return this.#refresh.bind(fence, now, id);
  }

}
