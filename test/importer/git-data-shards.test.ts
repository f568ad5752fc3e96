import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { smallProject, startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, testJobsUrl, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { credentialEnv } from './harness.js';
import { archiveFiles } from './support/archives.js';

/*
 * Distributed mode: the import's mirror lives on a worker's shard; an api
 * process (no files) forwards each git-data request whole to that worker
 * and answers what it answered, the links pointed at the copy.
 */
describe('git data across shards', () => {
  const apps: Forgesync[] = [];
  let database: TestDatabase;
  let fake: FakeGitHub;
  let api: ForgesyncServer;
  let base: string;
  let repo: string;
  const read = testSecret('GIT_DATA_DIST_READ');
  const githubToken = testSecret('GIT_DATA_DIST_GITHUB');

  beforeAll(async () => {
    fake = await startFakeGitHub({ tokens: [githubToken], project: smallProject() });
    database = await createTestDatabase('postgres');
    const env = { FORGESYNC_JOBS_URL: testJobsUrl(13), FORGESYNC_CLUSTER_TOKEN: testSecret('GIT_DATA_DIST_CLUSTER'), FORGESYNC_LEASE_TTL: '5s', ...credentialEnv(fake, [githubToken]) };
    for (const shard of ['a', 'b']) {
      const { app } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_SHARD: shard, FORGESYNC_ROLE: shard === 'a' ? 'worker,scheduler' : 'worker' }));
      apps.push(app);
      await app.startService();
    }
    const { app: apiApp } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_ROLE: 'api' }));
    apps.push(apiApp);
    api = await buildServer(apiApp, { tokens: { admin: testSecret('GIT_DATA_DIST_ADMIN'), read } });
    base = `${await api.listen({ port: 0, host: '127.0.0.1' })}/github`;
    const record = await apiApp.importer.create({ project: `${fake.project.repo.owner}/${fake.project.repo.name}`, apiUrl: fake.apiUrl, credentials: ['GH'] });
    await eventually('the import synced', async () => (await apiApp.importer.get(record.name)).state === 'synced', 120_000, 200);
    repo = `/repos/${fake.project.repo.owner}/${fake.project.repo.name}`;
  }, 180_000);

  afterAll(async () => {
    await api?.close();
    for (const app of apps.splice(0).reverse()) await app.close();
    await database?.drop();
    await fake?.close();
  });

  const get = async (url: string, token: string, headers: Record<string, string> = {}) => {
    const response = await fetch(url, { headers: { authorization: `token ${token}`, ...headers } });
    return { status: response.status, type: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
  };

  it('answers from the owning worker what the fake answers, links on the copy', async () => {
    // The api process has no mirror of its own: every answer below came from a worker.
    const apiMirrors = apps.at(-1)!.config.mirrorsDir;
    expect(existsSync(apiMirrors) ? readdirSync(apiMirrors) : []).toEqual([]);
    for (const path of ['/commits/main', '/contents/src', '/git/refs', '/branches/release/1.x', '/readme', '/commits/no-such-ref']) {
      const [fromFake, fromCopy] = await Promise.all([get(`${fake.apiUrl}${repo}${path}`, githubToken), get(`${base}${repo}${path}`, read)]);
      expect([path, fromCopy.status]).toEqual([path, fromFake.status]);
      if (fromFake.status !== 200) continue;
      expect([path, JSON.parse(fromCopy.bytes.toString('utf8'))]).toEqual([path, JSON.parse(fromFake.bytes.toString('utf8').split(fake.apiUrl).join(base))]);
    }
    const raw = await get(`${base}${repo}/contents/README.md`, read, { accept: 'application/vnd.github.raw' });
    expect([raw.status, raw.bytes.toString('utf8')]).toEqual([200, '# widgets\n']);
    // The worker's redirect to the archive is passed on, pointed at the copy.
    const redirect = await fetch(`${base}${repo}/tarball/main`, { headers: { authorization: `token ${read}` }, redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')?.startsWith(`${base}${repo}/_codeload/tar.gz/`)]).toEqual([302, true]);
    const [tarFake, tarCopy] = await Promise.all([get(`${fake.apiUrl}${repo}/tarball/main`, githubToken), get(`${base}${repo}/tarball/main`, read)]);
    expect(archiveFiles(tarCopy.bytes, 'tar.gz')).toEqual(archiveFiles(tarFake.bytes, 'tar.gz'));
  });
});
