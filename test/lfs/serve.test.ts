import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENV, git, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { testSecret } from '../support/secrets.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { commitFiles, lfsRepository, secretsFile } from './fixtures.js';
import { LfsUpstream, testObject } from './lfs-upstream.js';

/*
 * Git LFS served by a real `forgesync serve` (its HTTP server, listening)
 * to Debian's git-lfs: a clone from forgesync checks out the real files,
 * asking forgesync's batch API and downloading from forgesync, never the
 * upstream. And what a hostile or careless client may try.
 */

const run = promisify(execFile);
const READ = testSecret('LFS_READ_TOKEN');
const LFS_JSON = 'application/vnd.git-lfs+json';

/** git with git-lfs as its filter, configured for this command only (no global config to install it in). */
const LFS_FILTER = ['-c', 'filter.lfs.process=git-lfs filter-process', '-c', 'filter.lfs.smudge=git-lfs smudge -- %f', '-c', 'filter.lfs.clean=git-lfs clean -- %f', '-c', 'filter.lfs.required=true'];

/** One raw HTTP request (the path sent as written: no client normalises `..`). */
function raw(url: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string; bytes: Buffer }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest({ host: hostname, port, path, method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: bytes.toString('utf8'), bytes });
      });
    });
    // A server that answered before reading the whole body may then drop the rest: the answer counts.
    req.on('error', (error) => (answered ? undefined : reject(error)));
    req.end(options.body);
  });
}

describe('Git LFS served from forgesync', () => {
  const token = testSecret('LFS_SERVE_UPSTREAM_TOKEN');
  const reader = `Basic ${Buffer.from(`anyone:${READ}`).toString('base64')}`;
  const a = testObject(1500);
  const b = testObject(2500);
  let upstream: LfsUpstream;
  let repo: Upstream;
  let t: TestServer;

  const batch = (name: string, body: unknown, headers: Record<string, string> = { authorization: reader }) =>
    raw(t.url!, `/git/${name}.git/info/lfs/objects/batch`, { method: 'POST', headers: { 'content-type': LFS_JSON, accept: LFS_JSON, ...headers }, body: JSON.stringify(body) });

  beforeAll(async () => {
    const root = tempDir();
    upstream = await LfsUpstream.start(root, token);
    for (const object of [a, b]) upstream.objects.set(object.oid, object);
    repo = lfsRepository(root, 'photos');
    commitFiles(repo, { 'a.bin': a, 'deep/dir/b.bin': b, 'README.md': 'photos\n' });
    t = await startTestServer({ listen: true, tokens: { read: READ }, env: { FORGESYNC_SECRETS_FILE: secretsFile(token, [upstream.forgeUrl]) } });
    await t.app.replication.addSource({ name: 'photos', url: `${upstream.forgeUrl}/photos.git`, credentialRef: 'lfs_bot' });
    expect((await t.app.replication.sync('photos')).served).toBe(true);
    // A source that references none of them (its upstream has no LFS files).
    const plain = Upstream.create(root, 'plain');
    await t.app.replication.addSource({ name: 'plain', url: plain.bare });
    expect((await t.app.replication.sync('plain')).served).toBe(true);
  });

  afterAll(async () => {
    await t?.close();
    await upstream?.close();
    removeTempDirs();
  });

  it('git clone with git-lfs checks out the real files, all from forgesync', async () => {
    const [batches, downloads] = [upstream.batchOids().length, upstream.storageRequests.length];
    const dir = tempDir();
    const url = `${t.url!.replace('http://', `http://anyone:${READ}@`)}/git/photos.git`;
    await run('git', [...LFS_FILTER, 'clone', '-q', url, 'copy'], { cwd: dir, env: FIXTURE_ENV });
    const copy = join(dir, 'copy');
    expect(readFileSync(join(copy, 'a.bin'))).toEqual(a.content);
    expect(readFileSync(join(copy, 'deep/dir/b.bin'))).toEqual(b.content);
    expect(git(copy, 'lfs', 'ls-files', '--long').split('\n').map((line) => line.split(' ')[0]).sort()).toEqual([a.oid, b.oid].sort());
    // Nothing was asked of the upstream meanwhile.
    expect([upstream.batchOids().length, upstream.storageRequests.length]).toEqual([batches, downloads]);
  });

  it('answers the batch API with hrefs on itself carrying the caller\'s authorization, and 404 per object it lacks', async () => {
    const unknown = 'e'.repeat(64);
    const answer = await batch('photos', { operation: 'download', transfers: ['basic'], objects: [{ oid: a.oid, size: a.size }, { oid: unknown, size: 3 }] });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toContain(LFS_JSON);
    const objects = (JSON.parse(answer.body) as { objects: { oid: string; actions?: { download: { href: string; header: Record<string, string> } }; error?: { code: number } }[] }).objects;
    const href = new URL(objects[0]!.actions!.download.href);
    expect(href.origin).toBe(t.url);
    expect(href.pathname).toBe(`/git/photos.git/info/lfs/objects/${a.oid}`);
    expect(objects[0]!.actions!.download.header).toEqual({ Authorization: reader });
    expect(objects[1]).toMatchObject({ oid: unknown, error: { code: 404 } });
    const download = await raw(t.url!, href.pathname, { headers: { authorization: reader } });
    expect(download.status).toBe(200);
    expect(download.bytes).toEqual(a.content);
  });

  it('refuses uploads: the copy is read-only', async () => {
    const answer = await batch('photos', { operation: 'upload', objects: [{ oid: a.oid, size: a.size }] });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).message).toMatch(/read-only/);
  });

  it('refuses batch requests too large to be one, without reading them whole', async () => {
    const body = `{"operation":"download","objects":[${'0,'.repeat(1024 * 1024)}0]}`;
    const huge = await raw(t.url!, '/git/photos.git/info/lfs/objects/batch', { method: 'POST', headers: { authorization: reader, 'content-type': LFS_JSON, 'content-length': String(body.length) }, body });
    expect(huge.status).toBe(413);
    const many = Array.from({ length: 1001 }, () => ({ oid: a.oid, size: a.size }));
    expect((await batch('photos', { operation: 'download', objects: many })).status).toBe(422);
  });

  it('asks for credentials first, and refuses a wrong token', async () => {
    const anonymous = await batch('photos', { operation: 'download', objects: [] }, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toContain('Basic');
    expect((await raw(t.url!, `/git/photos.git/info/lfs/objects/${a.oid}`)).status).toBe(401);
    const wrong = `Basic ${Buffer.from('anyone:not-the-token-at-all').toString('base64')}`;
    expect((await raw(t.url!, `/git/photos.git/info/lfs/objects/${a.oid}`, { headers: { authorization: wrong } })).status).toBe(401);
  });

  it('serves a source only the objects it references, whatever is on the disk', async () => {
    expect((await raw(t.url!, `/git/plain.git/info/lfs/objects/${a.oid}`, { headers: { authorization: reader } })).status).toBe(404);
    const answer = await batch('plain', { operation: 'download', objects: [{ oid: a.oid, size: a.size }] });
    expect(JSON.parse(answer.body).objects[0]).toMatchObject({ error: { code: 404 } });
  });

  it('finds nothing through names or oids with `..`', async () => {
    for (const path of [
      `/git/../photos.git/info/lfs/objects/${a.oid}`,
      `/git/plain/../photos.git/info/lfs/objects/${a.oid}`,
      `/git/..%2Fphotos.git/info/lfs/objects/${a.oid}`,
      '/git/photos.git/info/lfs/objects/..%2F..%2F..%2Fetc%2Fpasswd',
      `/git/photos.git/info/lfs/objects/../../../${a.oid}`,
    ]) {
      const answer = await raw(t.url!, path, { headers: { authorization: reader } });
      expect([400, 404], path).toContain(answer.status);
      expect(answer.body, path).not.toContain('root:');
    }
    expect((await batch('../photos', { operation: 'download', objects: [{ oid: a.oid, size: a.size }] })).status).toBe(404);
  });
});
