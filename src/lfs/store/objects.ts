import { sql, type Kysely } from 'kysely';
import type { Big, Millis } from '../../store/columns.js';
import type { Database } from '../../store/database.js';
import type { LfsPointer } from '../pointer.js';

/** Where an LFS object stands for a source that references it (see migration 019). */
export type LfsObjectState = 'pending' | 'present' | 'missing' | 'failed' | 'refused';

/** The `lfs_objects` table. */
type LfsObjectsTable = {
  source_id: Big;
  oid: string;
  size: Big;
  state: LfsObjectState;
  error: string | null;
  updated_at: Millis;
};

/** The `lfs_scans` table. */
type LfsScansTable = {
  source_id: Big;
  /** JSON array of object ids. */
  tips: string;
  checksum: string | null;
  scanned_at: Millis;
};

/** The lfs module's tables, added to the registry's schema (they are the module's own: no other module reads them). */
type LfsSchema = {
  lfs_objects: LfsObjectsTable;
  lfs_scans: LfsScansTable;
};

/** One object a source references, as recorded. */
export interface LfsObjectRow extends LfsPointer {
  state: LfsObjectState;
  error: string | null;
  updatedAt: Date;
}

/** A source's LFS objects in numbers: those stored and their bytes, and those referenced but not stored (missing, failed, refused, pending). */
export interface LfsSummary {
  objects: number;
  bytes: number;
  missing: number;
}

/** Rows written per statement (a few parameters each). */
const CHUNK = 200;
/** Errors are kept this long at most. */
const MAX_ERROR = 500;

/**
 * The SQL of the lfs module: which source references which object, and
 * what of each source's history was scanned. Writes for a source are made
 * by its sync's follower, under the source's lease (one writer per source);
 * `resetEverywhere` (fsck) touches every source's row of one oid.
 */
export class LfsObjectRepository {
  readonly #db: Kysely<LfsSchema>;

  constructor(database: Database) {
    this.#db = database.db.withTables<LfsSchema>() as unknown as Kysely<LfsSchema>;
  }

  /**
   * Records that `sourceId` references `pointers`. Inputs: the pointers
   * found by a scan. Stores a `pending` row for each one not recorded yet
   * (a row already there keeps its state: the same oid names the same bytes).
   */
  async reference(sourceId: number, pointers: readonly LfsPointer[], now: Date): Promise<void> {
    for (let start = 0; start < pointers.length; start += CHUNK) {
      const rows = pointers.slice(start, start + CHUNK).map((pointer) => ({ source_id: sourceId, oid: pointer.oid, size: pointer.size, state: 'pending' as const, error: null, updated_at: now.getTime() }));
      await this.#db.insertInto('lfs_objects').values(rows).onConflict((conflict) => conflict.columns(['source_id', 'oid']).doNothing()).execute();
    }
  }

  /**
   * The objects of `sourceId` to fetch now: pending and failed ones, those
   * refused for their size when the cap now allows them, and with
   * `missingToo` (refs moved: the upstream may have them now) the missing ones.
   */
  async toFetch(sourceId: number, options: { maxBytes: number; missingToo: 'missing too' | 'not missing' }): Promise<LfsPointer[]> {
    const rows = await this.#db
      .selectFrom('lfs_objects')
      .select(['oid', 'size'])
      .where('source_id', '=', sourceId)
      .where((eb) =>
        eb.or([
          eb('state', 'in', options.missingToo === 'missing too' ? ['pending', 'failed', 'missing'] : ['pending', 'failed']),
          eb.and([eb('state', '=', 'refused'), eb('size', '<=', options.maxBytes)]),
        ]),
      )
      .orderBy('oid')
      .execute();
    return rows.map((row) => ({ oid: row.oid, size: Number(row.size) }));
  }

  /** Records where object `oid` of `sourceId` stands. Inputs: the state and, unless present, why. */
  async setState(sourceId: number, oid: string, outcome: { state: LfsObjectState; error?: string }, now: Date): Promise<void> {
    const error = outcome.error === undefined ? null : outcome.error.slice(0, MAX_ERROR);
    await this.#db.updateTable('lfs_objects').set({ state: outcome.state, error, updated_at: now.getTime() }).where('source_id', '=', sourceId).where('oid', '=', oid).execute();
  }

  /** Every source's row of `oid` back to pending, with `error` (its file was found damaged or gone): the next syncs fetch it again. */
  async resetEverywhere(oid: string, error: string, now: Date): Promise<void> {
    await this.#db.updateTable('lfs_objects').set({ state: 'pending', error: error.slice(0, MAX_ERROR), updated_at: now.getTime() }).where('oid', '=', oid).where('state', '=', 'present').execute();
  }

  /** The objects `sourceId` references, by oid, optionally only those in `states`. */
  async list(sourceId: number, states?: readonly LfsObjectState[]): Promise<LfsObjectRow[]> {
    let query = this.#db.selectFrom('lfs_objects').select(['oid', 'size', 'state', 'error', 'updated_at']).where('source_id', '=', sourceId);
    if (states) query = query.where('state', 'in', [...states]);
    const rows = await query.orderBy('oid').execute();
    return rows.map((row) => ({ oid: row.oid, size: Number(row.size), state: row.state, error: row.error, updatedAt: new Date(Number(row.updated_at)) }));
  }

  /** Of `oids`, those `sourceId` references and has stored, with their sizes (what the batch API may offer). */
  async present(sourceId: number, oids: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    for (let start = 0; start < oids.length; start += CHUNK) {
      const rows = await this.#db
        .selectFrom('lfs_objects')
        .select(['oid', 'size'])
        .where('source_id', '=', sourceId)
        .where('state', '=', 'present')
        .where('oid', 'in', oids.slice(start, start + CHUNK))
        .execute();
      for (const row of rows) found.set(row.oid, Number(row.size));
    }
    return found;
  }

  /** Of `oids`, those some source references (in any state): what pruning must keep. */
  async referenced(oids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < oids.length; start += CHUNK) {
      const rows = await this.#db.selectFrom('lfs_objects').select('oid').distinct().where('oid', 'in', oids.slice(start, start + CHUNK)).execute();
      for (const row of rows) found.add(row.oid);
    }
    return found;
  }

  /** The summary of each of `sourceIds` (one statement; a source with no objects gets zeros). */
  async summaries(sourceIds: readonly number[]): Promise<Map<number, LfsSummary>> {
    const found = new Map<number, LfsSummary>(sourceIds.map((id) => [id, { objects: 0, bytes: 0, missing: 0 }]));
    if (sourceIds.length === 0) return found;
    const rows = await this.#db
      .selectFrom('lfs_objects')
      .select([
        'source_id',
        sql<number | string>`sum(case when state = 'present' then 1 else 0 end)`.as('objects'),
        sql<number | string | null>`sum(case when state = 'present' then size else 0 end)`.as('bytes'),
        sql<number | string>`sum(case when state = 'present' then 0 else 1 end)`.as('missing'),
      ])
      .where('source_id', 'in', [...sourceIds])
      .groupBy('source_id')
      .execute();
    for (const row of rows) found.set(Number(row.source_id), { objects: Number(row.objects), bytes: Number(row.bytes ?? 0), missing: Number(row.missing) });
    return found;
  }

  /** The tips whose history was scanned for `sourceId`, and the refs checksum then; undefined before its first scan. */
  async scanned(sourceId: number): Promise<{ tips: string[]; checksum: string | null } | undefined> {
    const row = await this.#db.selectFrom('lfs_scans').select(['tips', 'checksum']).where('source_id', '=', sourceId).executeTakeFirst();
    return row ? { tips: JSON.parse(row.tips) as string[], checksum: row.checksum } : undefined;
  }

  /** Records that the history of `tips` was scanned (their pointers are referenced). Stores the tips and the refs checksum. */
  async saveScan(sourceId: number, scan: { tips: readonly string[]; checksum: string }, now: Date): Promise<void> {
    const values = { tips: JSON.stringify(scan.tips), checksum: scan.checksum, scanned_at: now.getTime() };
    await this.#db
      .insertInto('lfs_scans')
      .values({ source_id: sourceId, ...values })
      .onConflict((conflict) => conflict.column('source_id').doUpdateSet(values))
      .execute();
  }
}
