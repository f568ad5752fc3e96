import type { Kysely, Migration } from 'kysely';

/**
 * The GitHub id of an imported repository, in its repository row's `number`
 * (`import_objects`, type `repository`): the GitHub-compatible API finds
 * the import `/repositories/{repository_id}/…` names by it, through the
 * `(import_id, type, number)` index, without reading any JSON. The importer
 * fills it when it stores the repository; this fills it for the
 * repositories stored before (one row per import, each parsed once here).
 * A row whose JSON has no whole-number id keeps `number` null.
 */
export function importRepositoryId(): Migration {
  return {
    async up(db: Kysely<any>) {
      const rows: { import_id: number | string; data: string }[] = await db
        .selectFrom('import_objects')
        .select(['import_id', 'data'])
        .where('type', '=', 'repository')
        .where('key', '=', 'repository')
        .where('number', 'is', null)
        .execute();
      for (const row of rows) {
        let id: unknown;
        try {
          id = (JSON.parse(row.data) as { id?: unknown }).id;
        } catch {
          continue;
        }
        if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) continue;
        await db
          .updateTable('import_objects')
          .set({ number: id })
          .where('import_id', '=', row.import_id)
          .where('type', '=', 'repository')
          .where('key', '=', 'repository')
          .execute();
      }
    },
    async down(db: Kysely<any>) {
      await db.updateTable('import_objects').set({ number: null }).where('type', '=', 'repository').execute();
    },
  };
}
