import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database } from '../../store/database.js';
import type { Millis } from '../../store/columns.js';
import type { Schema } from '../../store/types.js';

/** The `mirror_housekeeping` table (migration 018): one row per source, deleted with it. */
export interface MirrorHousekeepingTable {
  source_id: number;
  measured_at: Millis;
  last_run_at: Millis | null;
  /** The tasks of the last run, comma-separated (`geometric-repack,pack-refs`), or null. */
  last_tasks: string | null;
  packs: number;
  cruft_packs: number;
  loose_objects: number;
  loose_refs: number;
}

/** What housekeeping last found (and did) on a source's mirror. */
export interface HousekeepingReport {
  sourceId: number;
  /** When the mirror was last measured (after every sync that could change it). */
  measuredAt: Date;
  /** When housekeeping last ran a task on it; null: never (the mirror was always tidy). */
  lastRunAt: Date | null;
  /** The tasks of that run. */
  lastTasks: string[];
  packs: number;
  cruftPacks: number;
  looseObjects: number;
  looseRefs: number;
}

/** Reports asked for in one `IN (…)` at most. */
const IDS_PER_STATEMENT = 500;

/** The housekeeping reports of sources' mirrors. */
export class HousekeepingRepository {
  readonly #db: Kysely<Schema & { mirror_housekeeping: MirrorHousekeepingTable }>;

  constructor(database: Pick<Database, 'db'>) {
    this.#db = database.db.withTables<{ mirror_housekeeping: MirrorHousekeepingTable }>();
  }

  /** Records `report` as the source's latest (one row per source, replaced). */
  async record(report: HousekeepingReport): Promise<void> {
    const row = {
      measured_at: report.measuredAt.getTime(),
      last_run_at: report.lastRunAt?.getTime() ?? null,
      last_tasks: report.lastTasks.length > 0 ? report.lastTasks.join(',') : null,
      packs: report.packs,
      cruft_packs: report.cruftPacks,
      loose_objects: report.looseObjects,
      loose_refs: report.looseRefs,
    };
    // Under the source's lease, as its removal is: the source cannot go meanwhile.
    await this.#db
      .insertInto('mirror_housekeeping')
      .values({ source_id: report.sourceId, ...row })
      .onConflict((conflict) => conflict.column('source_id').doUpdateSet(row))
      .execute();
  }

  /** The reports of the sources `ids`, by source id (a source never measured has none). */
  async find(ids: readonly number[]): Promise<Map<number, HousekeepingReport>> {
    const reports = new Map<number, HousekeepingReport>();
    for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) {
      const chunk = ids.slice(start, start + IDS_PER_STATEMENT);
      const rows = await this.#db.selectFrom('mirror_housekeeping').selectAll().where('source_id', 'in', chunk).execute();
      for (const row of rows) reports.set(Number(row.source_id), toReport(row));
    }
    return reports;
  }

  /** Loose objects and packs of every measured mirror, summed (the metrics' gauges). */
  async totals(): Promise<{ looseObjects: number; packs: number; looseRefs: number }> {
    const row = await this.#db
      .selectFrom('mirror_housekeeping')
      .select([
        sql<string | number | null>`sum(loose_objects)`.as('loose_objects'),
        sql<string | number | null>`sum(packs)`.as('packs'),
        sql<string | number | null>`sum(loose_refs)`.as('loose_refs'),
      ])
      .executeTakeFirst();
    return { looseObjects: Number(row?.loose_objects ?? 0), packs: Number(row?.packs ?? 0), looseRefs: Number(row?.loose_refs ?? 0) };
  }
}

function toReport(row: Selectable<MirrorHousekeepingTable>): HousekeepingReport {
  return {
    sourceId: Number(row.source_id),
    measuredAt: new Date(Number(row.measured_at)),
    lastRunAt: row.last_run_at === null ? null : new Date(Number(row.last_run_at)),
    lastTasks: row.last_tasks ? row.last_tasks.split(',') : [],
    packs: row.packs,
    cruftPacks: row.cruft_packs,
    looseObjects: row.loose_objects,
    looseRefs: row.loose_refs,
  };
}
