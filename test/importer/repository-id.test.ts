import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { findImportByRepositoryId } from '../../src/importer/store/read-api.js';

/*
 * Migration 021: the repository rows stored before it get their GitHub id
 * in `number`, so `/repositories/{id}` finds those imports too.
 */

const NOW = Date.UTC(2026, 0, 1);

async function addImport(db: Kysely<any>, name: string, repository: unknown): Promise<number> {
  const row = await db
    .insertInto('imports')
    .values({ name, owner: 'acme', repo: name, api_url: 'https://api.github.com', credentials: '[]', concurrency: 1, state: 'synced', stage: 'finish', mode: 'sync', created_at: NOW, updated_at: NOW })
    .returning('id')
    .executeTakeFirstOrThrow();
  const id = Number(row.id);
  await db.insertInto('import_objects').values({ import_id: id, type: 'repository', key: 'repository', run: 1, data: typeof repository === 'string' ? repository : JSON.stringify(repository) }).execute();
  return id;
}

describe('migration 021: repository ids of the imports stored before it', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('fills the id of every stored repository that has one, and /repositories/{id} finds its import', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-repository-id-'));
    dirs.push(dir);
    const url = `sqlite:${join(dir, 'registry.db')}`;
    let database: Database = await openDatabase(url);
    let ids: number[];
    try {
      const down = await new Migrator({ db: database.db, provider: migrationProvider(database.dialect) }).migrateTo('020_import_list_columns');
      // Back to before 021 (later migrations undone first): every step down succeeded, 021's last.
      const steps = down.results?.map((r) => `${r.direction} ${r.migrationName} ${r.status}`) ?? [];
      expect(steps.every((step) => step.startsWith('Down ') && step.endsWith(' Success'))).toBe(true);
      expect(steps.at(-1)).toBe('Down 021_import_repository_id Success');
      const db = database.db as unknown as Kysely<any>;
      ids = [await addImport(db, 'widgets', { id: 470000123, name: 'widgets' }), await addImport(db, 'odd', { id: 'not-a-number' }), await addImport(db, 'broken', '{not json')];
    } finally {
      await database.close();
    }
    // Opening migrates to the latest again.
    database = await openDatabase(url);
    try {
      const rows = await (database.db as unknown as Kysely<any>).selectFrom('import_objects').select(['import_id', 'number']).where('type', '=', 'repository').orderBy('import_id').execute();
      expect(rows.map((row) => (row.number === null ? null : Number(row.number)))).toEqual([470000123, null, null]);
      expect((await findImportByRepositoryId(database, 470000123, () => true))?.id).toBe(ids[0]);
      expect(await findImportByRepositoryId(database, 470000123, (name) => name !== 'widgets')).toBeUndefined();
      expect(await findImportByRepositoryId(database, 470000124, () => true)).toBeUndefined();
    } finally {
      await database.close();
    }
  });
});
