import type { Kysely } from 'kysely';
import { numberStagedChanges } from '../../../src/store/change-log.js';
import type { Schema } from '../../../src/store/types.js';

/** The change log's head (what is committed numbered first, as a feed would): a mark for deletedChangesSince. */
export async function changeHead(db: Kysely<Schema>): Promise<number> {
  await numberStagedChanges(db);
  return Number((await db.selectFrom('change_head').select('seq').executeTakeFirstOrThrow()).seq);
}

/** The importer's `deleted` changes recorded after `afterSeq`, as `<type> <key>`, sorted. */
export async function deletedChangesSince(db: Kysely<Schema>, afterSeq: number): Promise<string[]> {
  await numberStagedChanges(db);
  const rows = await db.selectFrom('change_log').selectAll().where('module', '=', 'importer').where('seq', '>', afterSeq).execute();
  return rows
    .filter((row) => (JSON.parse(row.data!) as { action: string }).action === 'deleted')
    .map((row) => `${row.type.replace('dev.forgesync.import.', '')} ${row.object_key}`)
    .sort();
}
