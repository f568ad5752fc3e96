import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { fileSinkEvents } from './file-events.js';

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const run = promisify(execFile);

async function forgesync(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return forgesyncWith({}, dataDir, ...args);
}

/** `forgesync` with `env` added to its environment. */
async function forgesyncWith(env: Record<string, string>, dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      env: { ...process.env, FORGESYNC_DATA_DIR: dataDir, FORGESYNC_GIT_PROTOCOLS: 'https,ssh,file', FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}


describe('forgesync feed', () => {
  it('adds a feed, syncs it, and reports it as the contract says', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-feed-cli-'));
    // Inside the feed file root (default <dataDir>/feeds): file sinks write nowhere else.
    const out = join(dataDir, 'feeds', 'out');
    mkdirSync(out, { recursive: true });
    const upstream = Upstream.create();
    expect((await forgesync(dataDir, 'add', upstream.bare, '--name', 'demo')).code).toBe(0);
    expect((await forgesync(dataDir, 'sync', 'demo', '--wait')).code).toBe(0);
    const added = await forgesync(dataDir, 'feed', 'add', 'files', '--sink', `file://${out}`, '--types', 'dev.forgesync.ref.*', '--sources', 'de*', '--batch', '10', '--json');
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ name: 'files', types: ['dev.forgesync.ref.*'], sources: 'de*', batch: 10, fullSync: { requested: true } });

    const full = JSON.parse((await forgesync(dataDir, 'feed', 'resync', 'files', '--wait', '--json')).stdout);
    expect(full.fullSync).toMatchObject({ requested: false, running: false });
    const sha = upstream.commit('main');
    expect((await forgesync(dataDir, 'sync', 'demo', '--wait')).code).toBe(0);
    const synced = await forgesync(dataDir, 'feed', 'sync', 'files', '--wait', '--json');
    expect(synced.code).toBe(0);
    const status = JSON.parse((await forgesync(dataDir, 'feed', 'status', 'files', '--json')).stdout);
    expect(Object.keys(status)).toEqual(expect.arrayContaining(['name', 'sink', 'types', 'sources', 'paused', 'headSeq', 'ackedSeq', 'lag', 'lastRun', 'holder', 'skips', 'retrying', 'deadLetters', 'fullSync']));
    expect(status).toMatchObject({ paused: false, lag: { changes: 0, oldestAgeS: 0 }, holder: null, skips: 0, retrying: 0, deadLetters: 0, lastRun: { operation: 'partial sync', outcome: 'delivered', delivered: 1 } });
    expect(status.ackedSeq).toBe(status.headSeq);
    const last = fileSinkEvents(out).at(-1)!;
    expect(last).toMatchObject({ type: 'dev.forgesync.ref.updated', subject: 'refs/heads/main', data: { source: 'demo', after: sha, forced: false } });

    expect(JSON.parse((await forgesync(dataDir, 'feed', 'pause', 'files', '--json')).stdout).paused).toBe(true);
    expect(JSON.parse((await forgesync(dataDir, 'feed', 'resume', 'files', '--json')).stdout).paused).toBe(false);
    const list = JSON.parse((await forgesync(dataDir, 'feed', 'list', '--json')).stdout);
    expect(list.map((feed: { name: string }) => feed.name)).toEqual(['files']);
    expect(JSON.parse((await forgesync(dataDir, 'feed', 'dead-letters', 'files', '--json')).stdout)).toEqual([]);
    expect((await forgesync(dataDir, 'feed', 'replay', 'files', '--from-seq', '1')).code).toBe(0);
    expect((await forgesync(dataDir, 'feed', 'remove', 'files')).code).toBe(0);
    expect((await forgesync(dataDir, 'feed', 'status', 'files')).stderr).toContain('feed "files" does not exist');
  });

  it('refuses bad input with a message naming it, storing nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-feed-cli-'));
    const password = testSecret('FEED_URL_PASSWORD');
    const inside = `file://${dataDir}/feeds/x`;
    const cases: [string[], RegExp][] = [
      [['--sink', `https://user:${password}@hooks.example.com/x`], /secret|password|--secret/i],
      [['--sink', 'gopher://example.com/'], /scheme|supported/i],
      [['--sink', inside, '--types', 'bogus'], /change type "bogus"/],
      [['--sink', inside, '--batch', 'many'], /--batch/],
      [['--sink', 'file:///tmp/x'], new RegExp(`a file sink writes only inside the feed file root ${join(dataDir, 'feeds')} \\(FORGESYNC_FEED_FILE_ROOT\\)`)],
      [['--sink', 'https://hooks.example.com/x', '--secret-env', 'FORGESYNC_ADMIN_TOKEN'], /secretEnv \(--secret-env\) was replaced by secret \(--secret <name>\).*FORGESYNC_FEED_SECRET_<NAME>/],
      [['--sink', 'https://hooks.example.com/x', '--secret', 'not a name'], /the feed's secret cannot be used with its sink: the operator defines feed secrets/],
    ];
    for (const [flags, message] of cases) {
      const result = await forgesync(dataDir, 'feed', 'add', 'bad', ...flags);
      expect(result.code, flags.join(' ')).not.toBe(0);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain(password);
    }
    expect(JSON.parse((await forgesync(dataDir, 'feed', 'list', '--json')).stdout)).toEqual([]);
    expect((await forgesync(dataDir, 'feed', 'replay', 'missing', '--from-seq', 'x')).stderr).toMatch(/--from-seq/);
  });

  it('--secret: the same words whether the name is set in the environment or not, and nothing stored', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-feed-cli-'));
    const token = testSecret('FEED_CLI_CREDENTIAL', 'ghp_');
    const add = (env: Record<string, string>) => forgesyncWith(env, dataDir, 'feed', 'add', 'probe', '--sink', 'nats://127.0.0.1:4222/forgesync.changes', '--secret', 'FORGESYNC_CREDENTIAL_GITHUB_BOT');
    const set = await add({ FORGESYNC_CREDENTIAL_GITHUB_BOT: token, FORGESYNC_CREDENTIAL_GITHUB_BOT_HOSTS: '127.0.0.1:4222' });
    const unset = await add({});
    expect(set.code).not.toBe(0);
    expect(set.stderr).toBe(unset.stderr);
    expect(set.stderr).toMatch(/the feed's secret cannot be used with its sink/);
    expect(set.stderr).not.toContain(token);
    // A feed secret bound to the host: added, its name shown, never its value.
    const bound = await forgesyncWith(
      { FORGESYNC_FEED_SECRET_ORDERS: token, FORGESYNC_FEED_SECRET_ORDERS_HOSTS: '127.0.0.1:4222' },
      dataDir, 'feed', 'add', 'orders', '--sink', 'nats://127.0.0.1:4222/forgesync.changes', '--secret', 'orders', '--json',
    );
    expect(bound.code, bound.stderr).toBe(0);
    expect(JSON.parse(bound.stdout)).toMatchObject({ name: 'orders', secret: 'orders' });
    expect(bound.stdout).not.toContain(token);
    expect(JSON.parse((await forgesync(dataDir, 'feed', 'list', '--json')).stdout).map((feed: { name: string }) => feed.name)).toEqual(['orders']);
  });
});
