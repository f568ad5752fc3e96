import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testSecret } from '../support/secrets.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const ADMIN = testSecret('PATHS_ADMIN_TOKEN');
const READ = testSecret('PATHS_READ_TOKEN');

/*
 * Texts forgesync stores about failures (git's and the file system's words)
 * name the server's directories. The operator's views keep them (the rows,
 * the CLI's JSON, the log); HTTP answers, to read and admin tokens alike,
 * show placeholders instead (`<dataDir>`, `<feedFiles>`): sources' are in
 * api.test.ts, snapshots' in api-snapshots.test.ts.
 */
describe('HTTP answers name no directory of the server: imports and feeds', () => {
  let t: TestServer;
  const get = (url: string, token = READ) => t.server.inject({ method: 'GET', url, headers: t.auth(token) });

  beforeAll(async () => {
    t = await startTestServer({ tokens: { admin: ADMIN, read: READ } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('hides them in an import\'s failure and its objects\' failures', async () => {
    const { dataDir } = t.app.config;
    const { db } = t.app.kernel.database;
    const record = await t.app.importer.create({ project: 'octo/paths', apiUrl: 'https://github.example.com/api/v3' });
    const failure = `cannot write ${join(dataDir, 'import-files', '1', 'a.png')}: ENOSPC`;
    await db.updateTable('imports').set({ state: 'failed', failure }).where('id', '=', record.id).execute();
    await db.insertInto('import_failures').values({ import_id: record.id, type: 'attachment', key: 'https://github.example.com/a.png', run: 1, error: `EACCES: open '${dataDir}/import-files/1/a.png'`, at: Date.now() }).execute();

    // The operator's `forgesync import status --json` keeps the paths.
    const cli = await t.app.importer.status(record.name);
    expect(cli.failure).toBe(failure);
    expect(cli.failures[0]!.error).toContain(dataDir);

    for (const [url, token] of [[`/api/imports/${record.name}`, READ], ['/api/imports', READ], [`/api/imports/${record.name}`, ADMIN]] as const) {
      const response = await get(url, token);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.body, url).not.toContain(dataDir);
      const status = [response.json()].flat()[0];
      expect(status.failure).toBe('cannot write <dataDir>/import-files/1/a.png: ENOSPC');
      expect(status.failures[0].error).toBe("EACCES: open '<dataDir>/import-files/1/a.png'");
    }
  });

  it('hides them in a feed\'s file sink, its errors and its dead letters, and in refusals', async () => {
    const { dataDir, feedFileRoot } = t.app.config;
    const { db } = t.app.kernel.database;
    const added = await t.server.inject({ method: 'POST', url: '/api/feeds', headers: t.auth(ADMIN), payload: { name: 'files', sink: pathToFileURL(join(feedFileRoot, 'out')).href } });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json().sink).toBe('file://<feedFiles>/out');
    const lastError = `EACCES: permission denied, open '${join(feedFileRoot, 'out', 'x.ndjson')}'`;
    const feed = await db.updateTable('feeds').set({ last_error: lastError }).where('name', '=', 'files').returning('id').executeTakeFirstOrThrow();
    await db.insertInto('feed_dead_letters').values({ feed_id: feed.id, seq: 1, change_key: 'k', attempts: 3, next_at: 0, last_error: lastError }).execute();
    expect((await t.app.feeds.status('files')).lastError).toBe(lastError);

    for (const url of ['/api/feeds/files', '/api/feeds', '/api/feeds/files/dead-letters']) {
      const response = await get(url);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.body, url).not.toContain(dataDir);
      expect(response.body, url).not.toContain(feedFileRoot);
    }
    const status = (await get('/api/feeds/files')).json();
    expect(status).toMatchObject({ sink: 'file://<feedFiles>/out', lastError: "EACCES: permission denied, open '<feedFiles>/out/x.ndjson'" });
    expect((await get('/api/feeds/files/dead-letters')).json()).toEqual([expect.objectContaining({ lastError: status.lastError })]);

    // A thrown error's message goes through the same hiding (the server's error handler).
    const refused = await t.server.inject({ method: 'POST', url: '/api/feeds', headers: t.auth(ADMIN), payload: { name: 'elsewhere', sink: 'file:///var/elsewhere' } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toContain('the feed file root <feedFiles> (FORGESYNC_FEED_FILE_ROOT)');
    expect(refused.body).not.toContain(feedFileRoot);
  });
});
