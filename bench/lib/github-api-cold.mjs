// Cold pages for bench/github-api.mjs: a page read by the store's own list statement
// (dist/importer/store/read-api.js listObjects) on a freshly opened database each
// time, so nothing the read API remembers between requests (the list's total, the
// page ends already served) helps: the count and the walk of the index from the
// start, as the first request after an import's write pays them.

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { quantile } from './github-api-load.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { openDatabase } = await import(join(ROOT, 'dist/store/database.js'));
const { listObjects } = await import(join(ROOT, 'dist/importer/store/read-api.js'));

/**
 * Inputs: the store's URL, the import's name, the pages to read (100 issues
 * each, `state=all`, newest first) and how many samples. Returns per page
 * { p50, p99 } in milliseconds of listObjects alone.
 */
export async function coldPages(databaseUrl, importName, pages, samples) {
  const times = pages.map(() => []);
  for (let sample = 0; sample < samples; sample++) {
    for (const [index, page] of pages.entries()) {
      const database = await openDatabase(databaseUrl);
      try {
        const row = await database.db.selectFrom('imports').select('id').where('name', '=', importName).executeTakeFirstOrThrow();
        const started = performance.now();
        const result = await listObjects(database, Number(row.id), { types: ['issue', 'pull_request_issue'], state: 'all', sort: 'created_at', direction: 'desc', page: { page, perPage: 100 } });
        times[index].push(performance.now() - started);
        if (result.data.length !== 100) throw new Error(`page ${page} of ${importName}: ${result.data.length} items`);
      } finally {
        await database.close();
      }
    }
  }
  return times.map((list) => ({ p50: quantile(list, 0.5), p99: quantile(list, 0.99) }));
}
