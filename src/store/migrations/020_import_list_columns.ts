import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../database.js';
import { LIST_COLUMNS, listColumns } from '../import-list-columns.js';

/** Rows read and rewritten per backfill step: bounded memory whatever the table's size. */
const BACKFILL_BATCH = 500;

/**
 * The list columns of `import_objects` (see store/import-list-columns.ts
 * for what each holds), so that every list filter and order of the
 * GitHub-compatible API is SQL on indexed columns:
 * - `sort_id`: the key as a number, the tiebreaker of every order (a cast
 *   of `key` in ORDER BY made every page a sort of all matching rows);
 * - `listed_as`: the list a row is served in (issues and pull requests'
 *   issue shapes share one, so one index range holds `/issues`);
 * - `milestone`, `author`, `assignees`, `mentions`, `head_label`,
 *   `base_ref`: what `milestone=`, `creator=`, `assignee=`, `mentioned=`,
 *   `head=`, `base=` compare.
 * Indexes lead with (import_id, listed_as) and have sort_id after the sort
 * column, one per order served (`created_at`, `updated_at`, `comments`, id;
 * state then created_at for the default `state=open` lists; number then
 * created_at for an issue's comments), so a page is a seek into one index;
 * the order indexes carry the filter columns too (tested on the entry, no
 * row read), and equality filters have partial indexes of their own.
 * Rows stored before are backfilled from their JSON in keyset batches, and
 * a pull request's `comments` (what `sort=popularity` orders by) is copied
 * from its issue shape, which is where GitHub counts them.
 */
export function importListColumns(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('import_objects').addColumn('sort_id', big).execute();
      for (const column of ['listed_as', 'author', 'assignees', 'mentions', 'head_label', 'base_ref']) {
        await db.schema.alterTable('import_objects').addColumn(column, 'text').execute();
      }
      await db.schema.alterTable('import_objects').addColumn('milestone', big).execute();
      await backfill(db);
      await createListIndexes(db);
    },
    async down(db: Kysely<any>) {
      for (const name of LIST_INDEXES.map((index) => index.name)) await db.schema.dropIndex(name).execute();
      for (const column of [...LIST_COLUMNS].reverse()) await db.schema.alterTable('import_objects').dropColumn(column).execute();
    },
  };
}

/**
 * The filter columns a walk along an order's index tests without reading the
 * table row: the JSON (`data`) comes before the list columns in every row, so
 * on SQLite a row's later columns are behind its overflow pages; in the index
 * entry they cost a few bytes.
 */
const FILTERED = ['state', 'milestone', 'author', 'labels', 'assignees'];

/** Each index: its name, columns, and the column it leaves out when null (a partial index of the rows that have one). */
const LIST_INDEXES: readonly { name: string; columns: string[]; partialOn?: string }[] = [
  { name: 'import_objects_list_id_idx', columns: ['import_id', 'listed_as', 'sort_id'] },
  { name: 'import_objects_list_created_idx', columns: ['import_id', 'listed_as', 'created_at', 'sort_id', ...FILTERED] },
  { name: 'import_objects_list_updated_idx', columns: ['import_id', 'listed_as', 'updated_at', 'sort_id', ...FILTERED] },
  { name: 'import_objects_list_comments_idx', columns: ['import_id', 'listed_as', 'comments', 'sort_id', ...FILTERED] },
  { name: 'import_objects_list_state_idx', columns: ['import_id', 'listed_as', 'state', 'created_at', 'sort_id'] },
  // An issue's comments and events, a pull request's reviews and review comments: the number, then creation.
  { name: 'import_objects_list_number_idx', columns: ['import_id', 'listed_as', 'number', 'created_at', 'sort_id'] },
  { name: 'import_objects_list_milestone_idx', columns: ['import_id', 'listed_as', 'milestone', 'created_at', 'sort_id'], partialOn: 'milestone' },
  { name: 'import_objects_list_author_idx', columns: ['import_id', 'listed_as', 'author', 'created_at', 'sort_id'], partialOn: 'author' },
  { name: 'import_objects_list_head_idx', columns: ['import_id', 'listed_as', 'head_label', 'created_at', 'sort_id'], partialOn: 'head_label' },
  { name: 'import_objects_list_base_idx', columns: ['import_id', 'listed_as', 'base_ref', 'created_at', 'sort_id'], partialOn: 'base_ref' },
];

async function createListIndexes(db: Kysely<any>): Promise<void> {
  for (const index of LIST_INDEXES) {
    let builder = db.schema.createIndex(index.name).on('import_objects').columns(index.columns);
    if (index.partialOn) builder = builder.where(sql.ref(index.partialOn), 'is not', null);
    await builder.execute();
  }
}

/**
 * Fills the list columns of every stored row from its JSON: keyset batches
 * in primary-key order (each reads BACKFILL_BATCH rows after the last one
 * done, so the work is linear in the table), one UPDATE per row by its key.
 * Then pull requests take the comment count of their issue shape.
 */
async function backfill(db: Kysely<any>): Promise<void> {
  let after: { import_id: number; type: string; key: string } | undefined;
  for (;;) {
    let query = db.selectFrom('import_objects').select(['import_id', 'type', 'key', 'data']);
    if (after) query = query.where(sql<boolean>`(import_id, type, key) > (${after.import_id}, ${after.type}, ${after.key})`);
    const rows = (await query.orderBy('import_id').orderBy('type').orderBy('key').limit(BACKFILL_BATCH).execute()) as {
      import_id: number;
      type: string;
      key: string;
      data: string;
    }[];
    for (const row of rows) {
      await db
        .updateTable('import_objects')
        .set({ ...listColumns(row.type, row.key, JSON.parse(row.data) as unknown) })
        .where('import_id', '=', row.import_id)
        .where('type', '=', row.type)
        .where('key', '=', row.key)
        .execute();
    }
    const last = rows.at(-1);
    if (!last || rows.length < BACKFILL_BATCH) break;
    after = { import_id: Number(last.import_id), type: last.type, key: last.key };
  }
  await sql`
    UPDATE import_objects SET comments = (
      SELECT shape.comments FROM import_objects shape
      WHERE shape.import_id = import_objects.import_id AND shape.type = 'pull_request_issue' AND shape.number = import_objects.number
    )
    WHERE type = 'pull_request' AND comments IS NULL`.execute(db);
}
