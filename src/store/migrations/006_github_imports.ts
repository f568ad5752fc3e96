import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/** Whether the store is PostgreSQL, and its 64-bit integer column type. */
interface ColumnTypes {
  pg: boolean;
  big: 'bigint' | 'integer';
}

/**
 * The GitHub importer's tables (see importer/store/*.ts for what each holds
 * and who writes it). Times forgesync keeps are epoch milliseconds; GitHub's
 * own timestamps stay ISO-8601 text as GitHub wrote them (`…Z`, which sorts
 * as text in time order); fences are 64-bit integers.
 *
 * - `imports`: one row per imported project: its state, stage, run and
 *   schedule, guarded by the import lease's fence.
 * - `import_objects`: what GitHub returned, one row per object and type,
 *   keyed by GitHub's id (or the branch name, …), with the JSON as received
 *   and the few columns the GitHub-compatible API filters and sorts on.
 * - `import_cursors`: per collection (and per parent where a list is per
 *   parent) where its walk stands: next page, since watermark, ETag, counts.
 * - `import_jobs`: the per-object jobs of the stage that fans out (the
 *   durable stage waiter), each guarded by its own lease's fence.
 * - `import_failures`: what could not be fetched or stored, by type and id.
 * - `import_users`: the logins that appear in an import.
 * - `github_users`: profiles shared across imports, per API host.
 * - `import_attachments`: Markdown attachments and release assets found, and
 *   the content-addressed file each was downloaded to.
 */
export function githubImports(dialect: StoreDialect): Migration {
  const pg = dialect === 'postgres';
  const types: ColumnTypes = { pg, big: pg ? 'bigint' : 'integer' };
  return {
    async up(db: Kysely<any>) {
      await createImportsTable(db, types);
      await createFetchedTables(db, types);
      await createWorkTables(db, types);
      await createUserTables(db, types);
      await createAttachmentTable(db, types);
    },

    async down(db: Kysely<any>) {
      for (const table of ['import_attachments', 'github_users', 'import_users', 'import_failures', 'import_jobs', 'import_cursors', 'import_objects', 'imports']) {
        await db.schema.dropTable(table).execute();
      }
    },
  };
}

/** `imports`: one row per imported project, unique by name whatever its case. */
async function createImportsTable(db: Kysely<any>, { pg, big }: ColumnTypes): Promise<void> {
  await db.schema
    .createTable('imports')
    .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('api_url', 'text', (c) => c.notNull())
    .addColumn('credentials', 'text', (c) => c.notNull())
    .addColumn('concurrency', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('stage', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('run', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('requested_seq', big, (c) => c.notNull().defaultTo(0))
    .addColumn('completed_seq', big, (c) => c.notNull().defaultTo(0))
    .addColumn('interval_ms', big)
    .addColumn('next_sync_at', big)
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('started_at', big)
    .addColumn('finished_at', big)
    .addColumn('progress_at', big)
    .addColumn('last_synced_at', big)
    .addColumn('failure', 'text')
    .addColumn('repository_source', 'text')
    .addColumn('wiki_source', 'text')
    .addColumn('requests_total', big, (c) => c.notNull().defaultTo(0))
    .addColumn('requests_counted', big, (c) => c.notNull().defaultTo(0))
    .addColumn('requests_not_modified', big, (c) => c.notNull().defaultTo(0))
    .addColumn('requests_retried', big, (c) => c.notNull().defaultTo(0))
    .addColumn('rate_limit_waits', big, (c) => c.notNull().defaultTo(0))
    .addColumn('rate_limit_wait_ms', big, (c) => c.notNull().defaultTo(0))
    .addColumn('rate', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('fence', big)
    .addColumn('updated_at', big, (c) => c.notNull())
    .addCheckConstraint('imports_state_check', sql`state in ('pending', 'started', 'synced', 'failed', 'cancelled')`)
    .addCheckConstraint('imports_mode_check', sql`mode in ('full', 'sync')`)
    .execute();
  await sql`CREATE UNIQUE INDEX imports_name_nocase_idx ON imports (lower(name))`.execute(db);
  await db.schema.createIndex('imports_state_idx').on('imports').columns(['state', 'next_sync_at']).execute();
}

/** `import_objects` (what GitHub returned) and `import_cursors` (where each walk stands). */
async function createFetchedTables(db: Kysely<any>, { big }: ColumnTypes): Promise<void> {
  await db.schema
    .createTable('import_objects')
    .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('number', big)
    .addColumn('parent', big)
    .addColumn('state', 'text')
    .addColumn('created_at', 'text')
    .addColumn('updated_at', 'text')
    .addColumn('labels', 'text')
    .addColumn('comments', 'integer')
    .addColumn('run', 'integer', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('import_objects_pkey', ['import_id', 'type', 'key'])
    .execute();
  await db.schema.createIndex('import_objects_number_idx').on('import_objects').columns(['import_id', 'type', 'number']).execute();
  await db.schema.createIndex('import_objects_updated_idx').on('import_objects').columns(['import_id', 'type', 'updated_at']).execute();

  await db.schema
    .createTable('import_cursors')
    .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('collection', 'text', (c) => c.notNull())
    .addColumn('run', 'integer', (c) => c.notNull())
    .addColumn('done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_url', 'text')
    .addColumn('walk_since', 'text')
    .addColumn('since', 'text')
    .addColumn('etag', 'text')
    .addColumn('last_id', 'text')
    .addColumn('pages', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('items', big, (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('import_cursors_pkey', ['import_id', 'collection'])
    .execute();
}

/** `import_jobs` (the per-object jobs of the stage that fans out) and `import_failures`. */
async function createWorkTables(db: Kysely<any>, { big }: ColumnTypes): Promise<void> {
  await db.schema
    .createTable('import_jobs')
    .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('stage', 'text', (c) => c.notNull())
    .addColumn('run', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('fence', big)
    .addColumn('updated_at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('import_jobs_pkey', ['import_id', 'key'])
    .addCheckConstraint('import_jobs_state_check', sql`state in ('pending', 'done', 'failed')`)
    .execute();
  await db.schema.createIndex('import_jobs_stage_idx').on('import_jobs').columns(['import_id', 'stage', 'state']).execute();

  await db.schema
    .createTable('import_failures')
    .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('run', 'integer', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('import_failures_pkey', ['import_id', 'type', 'key'])
    .execute();
}

/** `import_users` (the logins of an import) and `github_users` (profiles shared across imports). */
async function createUserTables(db: Kysely<any>, { big }: ColumnTypes): Promise<void> {
  await db.schema
    .createTable('import_users')
    .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('login_key', 'text', (c) => c.notNull())
    .addColumn('login', 'text', (c) => c.notNull())
    .addColumn('run', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('import_users_pkey', ['import_id', 'login_key'])
    .execute();

  await db.schema
    .createTable('github_users')
    .addColumn('api_host', 'text', (c) => c.notNull())
    .addColumn('login_key', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('data', 'text')
    .addColumn('etag', 'text')
    .addColumn('fetched_at', big, (c) => c.notNull())
    .addColumn('expires_at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('github_users_pkey', ['api_host', 'login_key'])
    .addCheckConstraint('github_users_state_check', sql`state in ('found', 'missing')`)
    .execute();
}

/** `import_attachments`: attachments and release assets found, and the file each was downloaded to. */
async function createAttachmentTable(db: Kysely<any>, { big }: ColumnTypes): Promise<void> {
  await db.schema
    .createTable('import_attachments')
    .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('url_key', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text')
    .addColumn('size', big)
    .addColumn('content_type', 'text')
    .addColumn('filename', 'text')
    .addColumn('error', 'text')
    .addColumn('run', 'integer', (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('import_attachments_pkey', ['import_id', 'url_key'])
    .addCheckConstraint('import_attachments_state_check', sql`state in ('pending', 'done', 'failed', 'refused')`)
    .execute();
  await db.schema.createIndex('import_attachments_sha_idx').on('import_attachments').columns(['import_id', 'sha256']).execute();
}
