import { sourceStatusJson } from '../../src/replication/commands.js';
import { existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { lfsObjectsDir } from '../../src/lfs/definition.js';
import { pointerText } from '../../src/lfs/pointer.js';
import { SourceNotFoundError } from '../../src/store/errors.js';
import { removeTempDirs, tempDir, type Upstream } from '../support/git-fixtures.js';
import { createTestDatabase, openTestForgesync, testConfig, type CapturedLogs, type TestDatabase } from '../support/harness.js';
import { metricValues } from '../support/metrics.js';
import { testSecret } from '../support/secrets.js';
import { commitFiles, lfsRepository, secretsFile } from './fixtures.js';
import { LfsUpstream, testObject } from './lfs-upstream.js';

/*
 * Git LFS objects replicated after syncs, against an upstream forge written
 * here: git over smart HTTP and the batch API on one origin (Basic auth with
 * the source's credential), the bytes on a second origin that wants its own
 * header and must never see the credential. On SQLite and PostgreSQL.
 */

const CAP = 4096;

describe.each(['sqlite', 'postgres'] as const)('LFS replication on %s', (kind) => {
  const token = testSecret('LFS_UPSTREAM_TOKEN');
  const basic = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  const a = testObject(300);
  const b = testObject(700);
  const c = testObject(900);
  const gone = testObject(400);
  const big = testObject(CAP + 1);
  const hostile = testObject(500);
  let database: TestDatabase;
  let app: Forgesync;
  let logs: CapturedLogs;
  let upstream: LfsUpstream;
  let repo: Upstream;
  let url: string;
  let objectsDir: string;

  const stored = (oid: string) => join(objectsDir, oid.slice(0, 2), oid.slice(2, 4), oid);
  const states = async (name: string) => Object.fromEntries((await app.lfs.objects(name)).map((row) => [row.oid, row.state]));
  const storageDownloads = () => upstream.storageRequests.length;

  beforeAll(async () => {
    const root = tempDir();
    upstream = await LfsUpstream.start(root, token);
    for (const object of [a, b, c, hostile]) upstream.objects.set(object.oid, object);
    upstream.hrefFor = (oid) => (oid === hostile.oid ? `http://169.254.169.254/objects/${oid}` : `${upstream.storageUrl}/objects/${oid}`);
    repo = lfsRepository(root, 'pics');
    commitFiles(repo, {
      'a.bin': a,
      'gone.bin': gone,
      'big.bin': big,
      'hostile.bin': hostile,
      // A blob that starts like a pointer and names a path, not an object: never asked for.
      'notes/evil.bin': `version https://git-lfs.github.com/spec/v1\noid sha256:${'../'.repeat(18)}etc/passwd\nsize 10\n`,
    });
    url = `${upstream.forgeUrl}/pics.git`;
    database = await createTestDatabase(kind);
    const config = testConfig(database.url, { FORGESYNC_SECRETS_FILE: secretsFile(token, [upstream.forgeUrl]), FORGESYNC_LFS_MAX_OBJECT_BYTES: String(CAP) });
    objectsDir = lfsObjectsDir(config.dataDir);
    ({ app, logs } = await openTestForgesync(config));
  });

  afterAll(async () => {
    await app?.close();
    await upstream?.close();
    await database?.drop();
    removeTempDirs();
  });

  it('fetches the objects of the pointers a sync brings, verified, stored once by content', async () => {
    await app.replication.addSource({ name: 'pics', url, credentialRef: 'lfs_bot' });
    expect((await app.replication.sync('pics')).served).toBe(true);
    expect(readFileSync(stored(a.oid))).toEqual(a.content);
    expect(await states('pics')).toEqual({ [a.oid]: 'present', [gone.oid]: 'missing', [big.oid]: 'refused', [hostile.oid]: 'failed' });
    const pics = await app.replication.getSource('pics');
    const summary = (await app.lfs.summaries([pics.id])).get(pics.id);
    expect(summary).toEqual({ objects: 1, bytes: a.size, missing: 3 });
    // `status --json` shows the same, beside the housekeeping section.
    const status = sourceStatusJson(pics, (await app.replication.statusSections([pics])).get(pics.id)) as Record<string, unknown>;
    expect(status.lfs).toEqual(summary);
    expect(status).toHaveProperty('housekeeping.packs');
    // The pointer over the cap and the hostile blob were never asked for.
    expect(upstream.batchOids().sort()).toEqual([a.oid, gone.oid, hostile.oid].sort());
    expect(logs.text).toContain('lfs_invalid_pointer');
    const outcomes = Object.fromEntries((await metricValues(app, 'forgesync_lfs_objects_total')).map(({ labels, value }) => [labels.outcome, value]));
    expect(outcomes).toMatchObject({ stored: 1, missing: 1, failed: 1, refused: 1 });
    expect((await metricValues(app, 'forgesync_lfs_downloaded_bytes_total'))[0]?.value).toBe(a.size);
  });

  it('sends the credential to the batch API only, and the storage host its own header only', () => {
    const batches = upstream.forgeRequests.filter((seen) => seen.path === '/pics.git/info/lfs/objects/batch');
    expect(batches.length).toBeGreaterThan(0);
    for (const seen of batches) expect(seen.headers.authorization).toBe(basic);
    expect(upstream.storageRequests.length).toBeGreaterThan(0);
    for (const seen of upstream.storageRequests) {
      expect(seen.headers.authorization).toBeUndefined();
      expect(JSON.stringify(seen.headers)).not.toContain(token);
      expect(seen.headers['x-storage-grant']).toBe(upstream.grant);
    }
  });

  it('lists why an object is not stored: gone upstream, over the cap, an href on a refused address', async () => {
    const rows = new Map((await app.lfs.objects('pics', ['missing', 'failed', 'refused'])).map((row) => [row.oid, row]));
    expect(rows.get(gone.oid)?.error).toMatch(/404/);
    expect(rows.get(big.oid)?.error).toMatch(/FORGESYNC_LFS_MAX_OBJECT_BYTES/);
    expect(rows.get(hostile.oid)?.error).toMatch(/169\.254\.169\.254/);
  });

  it('asks nothing after a sync that moved no refs, and only for what is new after one that did', async () => {
    const asked = upstream.batchOids().length;
    const downloads = storageDownloads();
    await app.replication.sync('pics');
    // A no-op sync retries only the failed object (the hostile href), never the stored or missing ones.
    expect(upstream.batchOids().slice(asked)).toEqual([hostile.oid]);
    commitFiles(repo, { 'b.bin': b, 'c.bin': c }, 'more pictures');
    const before = upstream.batchOids().length;
    await app.replication.sync('pics');
    expect(upstream.batchOids().slice(before).sort()).toEqual([b.oid, c.oid, gone.oid, hostile.oid].sort());
    expect(storageDownloads()).toBe(downloads + 2);
    expect(readFileSync(stored(c.oid))).toEqual(c.content);
  });

  it('sweeps what a killed download left, and only that: a file not written to for twice the LFS timeout', async () => {
    const downloads = join(objectsDir, '..', 'downloads');
    const killed = join(downloads, '.download-killed.tmp');
    const live = join(downloads, '.download-live.tmp');
    writeFileSync(killed, 'half an object');
    writeFileSync(live, 'a download under way');
    const longAgo = new Date(Date.now() - 3 * 3_600_000);
    utimesSync(killed, longAgo, longAgo);
    await app.replication.sync('pics');
    expect(existsSync(killed)).toBe(false);
    expect(existsSync(live)).toBe(true);
    rmSync(live);
    // Downloads that finished (or failed) left nothing there.
    expect(readdirSync(downloads)).toEqual([]);
  });

  it('shares stored objects with every source that references them', async () => {
    const downloads = storageDownloads();
    await app.replication.addSource({ name: 'pics-again', url, credentialRef: 'lfs_bot' });
    expect((await app.replication.sync('pics-again')).served).toBe(true);
    expect(storageDownloads()).toBe(downloads);
    expect(await states('pics-again')).toMatchObject({ [a.oid]: 'present', [b.oid]: 'present', [c.oid]: 'present' });
  });

  it('re-verifies with fsck: a damaged object is deleted and fetched again by the next sync', async () => {
    writeFileSync(stored(b.oid), Buffer.alloc(b.size, 7));
    const report = await app.lfs.fsck('pics');
    expect(report).toMatchObject({ name: 'pics', checked: 3, ok: 2, damaged: [b.oid], absent: [] });
    // Both sources share the file: both fetch it again.
    expect((await states('pics'))[b.oid]).toBe('pending');
    expect((await states('pics-again'))[b.oid]).toBe('pending');
    await app.replication.sync('pics');
    expect(readFileSync(stored(b.oid))).toEqual(b.content);
    expect((await app.lfs.fsck('pics')).damaged).toEqual([]);
  });

  it('drops a source\'s rows when the source is removed', async () => {
    const source = await app.replication.getSource('pics-again');
    await app.replication.removeSource('pics-again');
    await expect(app.lfs.objects('pics-again')).rejects.toBeInstanceOf(SourceNotFoundError);
    expect((await app.lfs.summaries([source.id])).get(source.id)).toEqual({ objects: 0, bytes: 0, missing: 0 });
    // The objects stay for the source that still references them.
    expect(readFileSync(stored(a.oid))).toEqual(a.content);
  });

  it('follows a download\'s redirects hop by hop: the credential stays on its host, a refused address is never reached', async () => {
    const moved = testObject(800);
    const trap = testObject(801);
    for (const object of [moved, trap]) upstream.objects.set(object.oid, object);
    const plainHref = upstream.hrefFor;
    upstream.hrefFor = (oid) => (oid === moved.oid || oid === trap.oid ? `${upstream.forgeUrl}/hop/${oid}` : plainHref(oid));
    upstream.redirectFor = (oid) => (oid === trap.oid ? `http://169.254.169.254/objects/${oid}` : `${upstream.storageUrl}/objects/${oid}?grant=${upstream.grant}`);
    const storageBefore = upstream.storageRequests.length;
    commitFiles(repo, { 'moved.bin': moved, 'trap.bin': trap }, 'redirected downloads');
    await app.replication.sync('pics');
    expect(readFileSync(stored(moved.oid))).toEqual(moved.content);
    const hops = upstream.forgeRequests.filter((seen) => seen.path.startsWith('/hop/'));
    expect(hops.map((seen) => seen.path).sort()).toEqual([`/hop/${moved.oid}`, `/hop/${trap.oid}`].sort());
    // The href's origin is the credential's: it gets both; the storage, another origin, gets neither.
    for (const seen of hops) expect([seen.headers.authorization, seen.headers['x-storage-grant']]).toEqual([basic, upstream.grant]);
    const redirected = upstream.storageRequests.slice(storageBefore);
    expect(redirected.map((seen) => seen.path)).toEqual([`/objects/${moved.oid}`]);
    expect([redirected[0]!.headers.authorization, redirected[0]!.headers['x-storage-grant']]).toEqual([undefined, undefined]);
    const trapped = (await app.lfs.objects('pics', ['failed'])).find((row) => row.oid === trap.oid);
    expect(trapped?.error).toMatch(/169\.254\.169\.254/);
  });

  it('asks the server .lfsconfig names, and never follows its redirect to a host the credential is not bound to', async () => {
    const moved = lfsRepository(join(repo.bare, '..'), 'configured');
    const elsewhere = testObject(650);
    upstream.objects.set(elsewhere.oid, elsewhere);
    commitFiles(moved, { '.lfsconfig': `[lfs]\n\turl = ${upstream.forgeUrl}/moved/info/lfs\n`, 'e.bin': elsewhere }, 'LFS elsewhere');
    const storageBefore = upstream.storageRequests.length;
    await app.replication.addSource({ name: 'configured', url: `${upstream.forgeUrl}/configured.git`, credentialRef: 'lfs_bot' });
    expect((await app.replication.sync('configured')).served).toBe(true);
    const asked = upstream.forgeRequests.filter((seen) => seen.path === '/moved/info/lfs/objects/batch');
    expect(asked.map((seen) => seen.headers.authorization)).toEqual([basic]);
    expect(upstream.storageRequests.length).toBe(storageBefore);
    const [row] = await app.lfs.objects('configured');
    expect(row).toMatchObject({ oid: elsewhere.oid, state: 'failed' });
    expect(row!.error).toContain(upstream.storageUrl);
  });

  it('prunes the objects only removed sources referenced, once unused for the grace period', async () => {
    const lonely = lfsRepository(join(repo.bare, '..'), 'lonely');
    const only = testObject(777);
    upstream.objects.set(only.oid, only);
    commitFiles(lonely, { 'only.bin': only, 'a.bin': a });
    await app.replication.addSource({ name: 'lonely', url: `${upstream.forgeUrl}/lonely.git`, credentialRef: 'lfs_bot' });
    await app.replication.sync('lonely');
    expect(readFileSync(stored(only.oid))).toEqual(only.content);
    await app.replication.removeSource('lonely');
    // Just used: kept.
    expect((await app.lfs.prune({ graceMs: 60_000 })).deleted).toBe(0);
    const pruned = await app.lfs.prune({ graceMs: 0 });
    expect(pruned).toMatchObject({ deleted: 1, bytes: only.size });
    expect(() => readFileSync(stored(only.oid))).toThrow();
    // Still referenced by pics: kept.
    expect(readFileSync(stored(a.oid))).toEqual(a.content);
  });

  it('stores nothing whose bytes are not the pointer\'s object', async () => {
    const liar = testObject(600);
    // The server holds other bytes under the pointer's oid.
    upstream.objects.set(liar.oid, { ...liar, content: Buffer.alloc(liar.size, 1) });
    commitFiles(repo, { 'liar.bin': liar }, 'a liar');
    await app.replication.sync('pics');
    const row = (await app.lfs.objects('pics', ['failed'])).find((entry) => entry.oid === liar.oid);
    expect(row?.error).toMatch(/not the object/);
    expect(() => readFileSync(stored(liar.oid))).toThrow();
    expect(pointerText(liar)).toContain(liar.oid);
  });
});
