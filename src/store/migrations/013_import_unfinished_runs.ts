import type { Kysely, Migration } from 'kysely';

/**
 * `imports.unfinished_runs`: how many coordinator runs of the import began
 * (its claim) since one last ended (synced, failed, stopped by a shutdown
 * or a lost lease) or an operator asked for it again (sync, resume). A
 * process that dies during a run (killed, out of memory) never ends it: a
 * count that keeps growing is a crash loop, and the coordinator parks the
 * import (failed, with a reason) instead of starting it again (see
 * importer/run/coordinator.ts).
 */
export function importUnfinishedRuns(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('imports').addColumn('unfinished_runs', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('imports').dropColumn('unfinished_runs').execute();
    },
  };
}
