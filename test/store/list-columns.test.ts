import { Migrator, sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/database.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { countObjects, listObjects } from '../../src/importer/store/read-api.js';
import { listColumns } from '../../src/store/import-list-columns.js';
import { postgresBackend, sqliteBackend, type StoreBackend, type StoreTarget } from './backends.js';

/*
 * Migration 020 (the list columns of import_objects): rows stored before it
 * get their columns from their JSON, in batches; a pull request takes its
 * issue shape's comment count; the list statements then filter on them and
 * page through an index, without sorting the rows. On both dialects.
 */

const ROWS = 1_203; // more than two backfill batches

function issue(n: number): Record<string, unknown> {
  return {
    id: 1000 + n,
    number: n,
    user: { login: n % 3 === 0 ? 'Alice' : 'bob' },
    assignees: n % 4 === 0 ? [{ login: 'Carol' }, { login: 'dave' }] : [],
    milestone: n % 5 === 0 ? { number: 2 } : null,
    body: n % 7 === 0 ? 'thanks @Erin, see `@frank`' : 'plain',
    created_at: `2024-01-01T00:00:${String(n % 60).padStart(2, '0')}Z`,
  };
}

async function seedBefore020(db: Kysely<any>): Promise<void> {
  const now = Date.now();
  await db
    .insertInto('imports')
    .values({ id: 1, name: 'acme/widgets', owner: 'acme', repo: 'widgets', api_url: 'https://api.github.com', credentials: '[]', concurrency: 1, state: 'synced', stage: 'done', mode: 'full', created_at: now, updated_at: now })
    .execute();
  const rows = Array.from({ length: ROWS }, (_, i) => {
    const data = issue(i + 1);
    return { import_id: 1, type: 'issue', key: String(data.id), number: data.number, state: 'open', created_at: data.created_at, updated_at: data.created_at, comments: 0, run: 1, data: JSON.stringify(data) };
  });
  for (let start = 0; start < rows.length; start += 200) await db.insertInto('import_objects').values(rows.slice(start, start + 200)).execute();
  const pull = { id: 9001, number: 5000, user: { login: 'bob' }, head: { label: 'Acme:Feature/X', ref: 'Feature/X' }, base: { ref: 'main' }, created_at: '2024-02-01T00:00:00Z' };
  await db
    .insertInto('import_objects')
    .values([
      { import_id: 1, type: 'pull_request', key: '9001', number: 5000, state: 'open', created_at: pull.created_at, updated_at: pull.created_at, comments: null, run: 1, data: JSON.stringify(pull) },
      { import_id: 1, type: 'pull_request_issue', key: '8001', number: 5000, state: 'open', created_at: pull.created_at, updated_at: pull.created_at, comments: 4, run: 1, data: JSON.stringify({ id: 8001, number: 5000, user: { login: 'bob' } }) },
    ])
    .execute();
}

function describeListColumns(backend: StoreBackend): void {
  describe(`list columns of import_objects (migration 020): ${backend.name}`, () => {
    let target: StoreTarget;
    let database: Database;

    beforeAll(async () => {
      target = await backend.fresh();
      database = await target.open();
      const migrator = new Migrator({ db: database.db, provider: migrationProvider(database.dialect) });
      // Back to before 020 (its down runs too), rows stored as they were then, and forward again.
      const down = await migrator.migrateTo('019_lfs');
      expect(down.error).toBeUndefined();
      await seedBefore020(database.db);
      const up = await migrator.migrateToLatest();
      expect(up.error).toBeUndefined();
    }, 60_000);
    afterAll(async () => {
      await database?.close();
      await target?.dispose();
    });

    it('backfills every row from its JSON, and a pull request its issue shape\'s comment count', async () => {
      const rows = await database.db.selectFrom('import_objects').select(['key', 'sort_id', 'listed_as', 'milestone', 'author', 'assignees', 'mentions', 'head_label', 'base_ref', 'comments']).where('type', '!=', 'repository').execute();
      expect(rows).toHaveLength(ROWS + 2);
      const byKey = new Map(rows.map((row) => [row.key, row]));
      expect(byKey.get('1020')).toMatchObject({ listed_as: 'issue', milestone: 2, author: 'bob', assignees: '\ncarol\ndave\n', mentions: null });
      expect(Number(byKey.get('1020')?.sort_id)).toBe(1020);
      expect(byKey.get('1021')).toMatchObject({ milestone: null, author: 'alice', assignees: null, mentions: '\nerin\n' });
      expect(byKey.get('9001')).toMatchObject({ listed_as: 'pull_request', head_label: 'acme:Feature/X', base_ref: 'main', author: 'bob' });
      expect(Number(byKey.get('9001')?.comments)).toBe(4);
      expect(byKey.get('8001')).toMatchObject({ listed_as: 'issue' });
      expect(rows.every((row) => row.listed_as !== null)).toBe(true);
    });

    it('filters and pages on them', async () => {
      const types = ['issue', 'pull_request_issue'] as const;
      const page = { page: 1, perPage: 100 };
      expect(await countObjects(database, 1, { types, state: 'all' })).toBe(ROWS + 1);
      const milestoned = await listObjects(database, 1, { types, milestone: { is: 2 }, sort: 'created_at', direction: 'asc', page });
      expect(milestoned.total).toBe(Math.floor(ROWS / 5));
      expect(milestoned.data.map((data) => (JSON.parse(data) as { number: number }).number % 5)).toEqual(Array(100).fill(0));
      expect((await listObjects(database, 1, { types, assignee: { is: 'carol' }, sort: 'id', direction: 'asc', page })).total).toBe(Math.floor(ROWS / 4));
      expect((await listObjects(database, 1, { types, assignee: { none: true }, sort: 'id', direction: 'asc', page })).total).toBe(ROWS + 1 - Math.floor(ROWS / 4));
      expect((await listObjects(database, 1, { types, creator: 'alice', sort: 'id', direction: 'asc', page })).total).toBe(Math.floor(ROWS / 3));
      expect((await listObjects(database, 1, { types, mentioned: 'erin', sort: 'id', direction: 'asc', page })).total).toBe(Math.floor(ROWS / 7));
      expect((await listObjects(database, 1, { types: ['pull_request'], head: 'acme:Feature/X', sort: 'comments', direction: 'desc', page })).total).toBe(1);
      // Page 12 (the last, 3 rows) in created order then id, descending: the same as sorting them all here.
      const last = await listObjects(database, 1, { types, state: 'all', sort: 'created_at', direction: 'desc', page: { page: 13, perPage: 100 } });
      const expected = Array.from({ length: ROWS }, (_, i) => issue(i + 1))
        .concat([{ id: 8001, created_at: '2024-02-01T00:00:00Z' }])
        .sort((a, b) => (a.created_at === b.created_at ? Number(b.id) - Number(a.id) : String(a.created_at) < String(b.created_at) ? 1 : -1))
        .slice(1200)
        .map((row) => row.id);
      expect(last.data.map((data) => (JSON.parse(data) as { id: number }).id)).toEqual(expected);
    });

    it('pages as one sorted list when walked page after page (from remembered page ends), and again after a write', async () => {
      const types = ['issue', 'pull_request_issue'] as const;
      const walk = async (sort: 'created_at' | 'comments' | 'id', direction: 'asc' | 'desc', perPage: number) => {
        const ids: number[] = [];
        for (let page = 1; ; page++) {
          const result = await listObjects(database, 1, { types, state: 'all', sort, direction, page: { page, perPage } });
          ids.push(...result.data.map((data) => (JSON.parse(data) as { id: number }).id));
          if (result.data.length < perPage) return { ids, total: result.total };
        }
      };
      const whole = async (sort: 'created_at' | 'comments' | 'id', direction: 'asc' | 'desc') =>
        (await listObjects(database, 1, { types, state: 'all', sort, direction, page: { page: 1, perPage: 100_000 } })).data.map((data) => (JSON.parse(data) as { id: number }).id);
      for (const [sort, direction] of [['created_at', 'desc'], ['created_at', 'asc'], ['comments', 'desc'], ['id', 'asc']] as const) {
        const paged = await walk(sort, direction, 97);
        expect(paged.ids, `${sort} ${direction}`).toEqual(await whole(sort, direction));
        expect(paged.total).toBe(ROWS + 1);
        // A page asked again, from a remembered page end, is the same page.
        const again = await listObjects(database, 1, { types, state: 'all', sort, direction, page: { page: 5, perPage: 97 } });
        expect(again.data.map((data) => (JSON.parse(data) as { id: number }).id)).toEqual(paged.ids.slice(4 * 97, 5 * 97));
      }
      // A deep page asked twice without the pages before it: walked, then sought from the anchor its first walk left.
      const deepPage = async () => (await listObjects(database, 1, { types, state: 'all', sort: 'id', direction: 'desc', page: { page: 11, perPage: 101 } })).data.map((data) => (JSON.parse(data) as { id: number }).id);
      const allById = await whole('id', 'desc');
      expect(await deepPage()).toEqual(allById.slice(1010, 1111));
      expect(await deepPage()).toEqual(allById.slice(1010, 1111));
      // A write (every batch appends its progress row) is seen by the next request: total and pages.
      const data = { ...issue(ROWS + 1), id: 999_999 };
      await database.db.insertInto('import_objects').values({ import_id: 1, type: 'issue', key: '999999', number: ROWS + 1, state: 'open', created_at: '2030-01-01T00:00:00Z', updated_at: '2030-01-01T00:00:00Z', comments: 0, run: 2, data: JSON.stringify(data), ...listColumns('issue', '999999', data) }).execute();
      await database.db.insertInto('import_progress').values({ import_id: 1, at: Date.now() }).execute();
      const after = await walk('created_at', 'asc', 97);
      expect(after.total).toBe(ROWS + 2);
      expect(after.ids.at(-1)).toBe(999_999);
      await database.db.deleteFrom('import_objects').where('key', '=', '999999').execute();
      await database.db.insertInto('import_progress').values({ import_id: 1, at: Date.now() }).execute();
    });

    it('serves an ordered page from an index: no sort of the matching rows', async () => {
      const query = sql`SELECT sort_id FROM import_objects WHERE import_id = 1 AND listed_as = 'issue' ORDER BY created_at DESC, sort_id DESC LIMIT 100 OFFSET 1000`;
      if (backend.name === 'sqlite') {
        const plan = await sql<{ detail: string }>`EXPLAIN QUERY PLAN ${query}`.execute(database.db);
        const details = plan.rows.map((row) => row.detail).join('\n');
        expect(details).toMatch(/COVERING INDEX import_objects_list_created_idx/);
        expect(details).not.toMatch(/TEMP B-TREE/);
      } else {
        // A table this small is cheaper to sort than to walk: forbid the sort, so the plan shows whether an index can serve the order.
        const plan = await database.db.transaction().execute(async (trx) => {
          await sql`SET LOCAL enable_sort = off`.execute(trx);
          await sql`SET LOCAL enable_bitmapscan = off`.execute(trx);
          return sql<{ 'QUERY PLAN': string }>`EXPLAIN ${query}`.execute(trx);
        });
        const details = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
        expect(details).toMatch(/import_objects_list_created_idx/);
        expect(details).not.toMatch(/\bSort\b/);
      }
    });
  });
}

describeListColumns(sqliteBackend);
describeListColumns(postgresBackend);
