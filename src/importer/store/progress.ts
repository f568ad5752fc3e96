import { type Compilable, type Kysely } from 'kysely';
import { run, runBatch, type Row } from '../../store/batch.js';
import { prepared, type PreparedQuery } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';
import type { RequestCounts } from '../github/request-counts.js';
import type { RateBudget } from '../github/pacer.js';

/** What the progress rows of one import add up to. */
export interface ProgressSum {
  counts: RequestCounts;
  /** The latest write's time. */
  at: number;
  /** The coordinator's latest rate budgets, or null when no row carries them. */
  rate: RateBudget[] | null;
}

const COUNT_COLUMNS = ['requests_total', 'requests_counted', 'requests_not_modified', 'requests_retried', 'rate_limit_waits', 'rate_limit_wait_ms', 'secondary_limited'] as const;
type CountColumn = (typeof COUNT_COLUMNS)[number];
const COUNT_KEYS: Record<CountColumn, keyof RequestCounts> = {
  requests_total: 'total',
  requests_counted: 'counted',
  requests_not_modified: 'notModified',
  requests_retried: 'retried',
  rate_limit_waits: 'rateLimitWaits',
  rate_limit_wait_ms: 'rateLimitWaitMs',
  secondary_limited: 'secondaryLimited',
};

/**
 * The `import_progress` table: one row appended by every committed batch of
 * an import (a page of the coordinator, a per-object job's answer), in that
 * batch's transaction: the requests it made since the last one, when it was
 * written (the stall watchdog's progress), and, from the coordinator, its
 * rate budgets.
 *
 * Why rows and not counters on the `imports` row: an UPDATE of one row per
 * batch makes every writer of the import wait for that row's lock in turn,
 * and one writer paused inside its transaction (SIGSTOP, a long GC) holds
 * them all. Appended rows lock nothing another writer needs. Readers add
 * them up (see ImportRepository); the coordinator folds them into one row
 * now and then ({@link compact}) so that sum stays small.
 */
export class ImportProgress {
  readonly #db: Kysely<Schema>;
  /** Inputs: import id, time, the seven counters (COUNT_COLUMNS order), rate JSON or null. Stores one row; returns nothing. */
  readonly #insert: PreparedQuery<[importId: number, at: number, ...counts: number[], rate: string | null], never>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
    this.#insert = prepared(db, (arg) =>
      db.insertInto('import_progress').values({
        import_id: arg(0) as number,
        at: arg(1) as number,
        requests_total: arg(2) as number,
        requests_counted: arg(3) as number,
        requests_not_modified: arg(4) as number,
        requests_retried: arg(5) as number,
        rate_limit_waits: arg(6) as number,
        rate_limit_wait_ms: arg(7) as number,
        secondary_limited: arg(8) as number,
        rate: arg(9) as string | null,
      }) as unknown as Compilable<never>,
    );
  }

  /** The row a batch appends (a step of its transaction): `rate` from the coordinator, null from a job. */
  step(importId: number, at: number, counts: RequestCounts, rate: RateBudget[] | null): Compilable {
    return this.#insert.bind(importId, at, ...COUNT_COLUMNS.map((column) => counts[COUNT_KEYS[column]]), rate === null ? null : JSON.stringify(rate));
  }

  /**
   * What the rows of each of `importIds` add up to (imports without rows are
   * absent). Inputs: the ids. Returns per import the summed counters, the
   * latest time, and the rate budgets of its newest row that has them.
   */
  async sums(importIds: readonly number[]): Promise<Map<number, ProgressSum>> {
    const sums = new Map<number, ProgressSum>();
    if (importIds.length === 0) return sums;
    const rows = await this.#db
      .selectFrom('import_progress as p')
      .select((eb) => [
        'p.import_id',
        ...COUNT_COLUMNS.map((column) => eb.fn.sum<number | string>(`p.${column}`).as(column)),
        eb.fn.max('p.at').as('at'),
        eb
          .selectFrom('import_progress as q')
          .select('q.rate')
          .whereRef('q.import_id', '=', 'p.import_id')
          .where('q.rate', 'is not', null)
          .orderBy('q.id', 'desc')
          .limit(1)
          .as('rate'),
      ])
      .where('p.import_id', 'in', [...importIds])
      .groupBy('p.import_id')
      .execute();
    for (const row of rows as Row[]) {
      sums.set(Number(row.import_id), { counts: countsOf(row), at: Number(row.at), rate: row.rate === null || row.rate === undefined ? null : (JSON.parse(String(row.rate)) as RateBudget[]) });
    }
    return sums;
  }

  /**
   * Folds the import's rows into one, in one transaction: deletes them
   * (RETURNING, so exactly the rows summed are the rows removed, whatever
   * commits meanwhile) and appends their sum, their latest time and the
   * newest rate budgets. Readers see the rows before or after, never both.
   * Takes no lock on the `imports` row: anyone may run it at any time.
   */
  async compact(importId: number): Promise<void> {
    const db = this.#db;
    const insert = this.#insert;
    await runBatch(db, function* () {
      const deleted = (yield* run(db.deleteFrom('import_progress').where('import_id', '=', importId).returningAll())).rows;
      if (deleted.length === 0) return;
      const sorted = [...deleted].sort((a, b) => Number(a.id) - Number(b.id));
      const counts = sorted.map(countsOf).reduce((sum, counts) => {
        for (const key of Object.keys(sum) as (keyof RequestCounts)[]) sum[key] += counts[key];
        return sum;
      });
      // The rate budgets stay as stored (JSON text): the newest row that has them.
      const rate = sorted.findLast((row) => row.rate !== null && row.rate !== undefined)?.rate;
      const at = sorted.reduce((latest, row) => Math.max(latest, Number(row.at)), 0);
      yield* run(insert, importId, at, ...COUNT_COLUMNS.map((column) => counts[COUNT_KEYS[column]]), rate === undefined ? null : String(rate));
    });
  }
}

function countsOf(row: Row): RequestCounts {
  const counts = {} as RequestCounts;
  for (const column of COUNT_COLUMNS) counts[COUNT_KEYS[column]] = Number(row[column] ?? 0);
  return counts;
}
