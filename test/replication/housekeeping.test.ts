import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { ForgesyncConfig } from '../../src/app/config.js';
import { LOOSE_OBJECTS_LIMIT, measureMirror } from '../../src/git/housekeeping.js';
import { servedViewOf } from '../../src/git/served-view.js';
import { sourceStatusJson } from '../../src/replication/commands.js';
import { HousekeepingRepository } from '../../src/replication/store/housekeeping.js';
import { git } from '../support/git-fixtures.js';
import { createTestDatabase, openTestForgesync, refsOf, testConfig } from '../support/harness.js';
import { metricValues } from '../support/metrics.js';
import { testSecret } from '../support/secrets.js';
import { startTestServer } from '../support/test-server.js';
import { Upstream } from '../support/upstream.js';

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));

/** `forgesync status <name> --json` run by the CLI against the app's database (needs `npm run build`). */
async function statusJson(config: ForgesyncConfig, name: string): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'status', name, '--json'], {
    env: {
      ...process.env,
      FORGESYNC_DATA_DIR: config.dataDir,
      FORGESYNC_DATABASE_URL: config.databaseUrl,
      FORGESYNC_GIT_PROTOCOLS: config.gitProtocols,
    },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe.each(['sqlite', 'postgres'] as const)('mirror housekeeping after syncs (%s)', (kind) => {
  it('packs a mirror that pushes keep untidying, reports it in status --json and as metrics, and forgets it with the source', async () => {
    const database = await createTestDatabase(kind);
    const config = testConfig(database.url);
    const { app, logs } = await openTestForgesync(config);
    try {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'busy' });
      // Never looked at yet: the fields are there, null.
      const before = sourceStatusJson(source, (await app.replication.statusSections([source])).get(source.id)) as { housekeeping?: unknown };
      expect(before.housekeeping).toEqual({ lastRunAt: null, packs: null, looseObjects: null, looseRefs: null, lastTasks: null });

      const mirror = (await app.replication.sync('busy')).registry.mirrorPath!;
      // A push every sync: a commit (three loose objects after the fetch) on a new branch (a loose ref).
      for (let push = 0; push < 40; push++) {
        upstream.commit(`topic-${push}`);
        expect((await app.replication.sync('busy')).registry.state).toBe('synced');
      }

      const measure = measureMirror(mirror);
      expect(measure.looseObjects).toBeLessThan(LOOSE_OBJECTS_LIMIT);
      expect(measure).toMatchObject({ bitmap: true, commitGraph: true });
      expect(readdirSync(join(mirror, 'objects', 'pack'))).toContain('multi-pack-index');
      const status = await statusJson(config, 'busy');
      expect(status.housekeeping).toEqual({
        lastRunAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        packs: measure.packs,
        looseObjects: measure.looseObjects,
        looseRefs: measure.looseRefs,
        lastTasks: expect.arrayContaining([expect.stringMatching(/^(geometric-repack|pack-refs|commit-graph)$/)]),
      });
      expect(measure.looseRefs).toBeLessThan(16);
      const runs = await metricValues(app, 'forgesync_housekeeping_runs_total');
      // The first look (a fresh clone has no bitmap), then once past the loose objects limit.
      expect(runs.find((value) => value.labels.task === 'geometric-repack' && value.labels.result === 'done')?.value).toBeGreaterThanOrEqual(2);
      expect(runs.find((value) => value.labels.task === 'pack-refs' && value.labels.result === 'done')?.value).toBeGreaterThanOrEqual(2);
      expect(runs.filter((value) => value.labels.result === 'failed')).toEqual([]);
      const sums = await metricValues(app, 'forgesync_mirror_objects');
      expect(sums.find((value) => value.labels.kind === 'loose_objects')?.value).toBe(measure.looseObjects);
      expect(logs.lines.filter((line) => line.event === 'housekeeping').length).toBeGreaterThanOrEqual(2);
      expect(logs.lines.filter((line) => line.event === 'sync_follower_failed')).toEqual([]);

      // Clones are served from the view, whose objects are the mirror's packs.
      const clone = join(mirror, '..', 'clone.git');
      git(join(mirror, '..'), 'clone', '--bare', '--no-local', '--quiet', servedViewOf(mirror), clone);
      expect(refsOf(clone)).toBe(refsOf(upstream.bare));

      await app.replication.removeSource('busy');
      expect(await new HousekeepingRepository(app.kernel.database).find([source.id])).toEqual(new Map());
    } finally {
      await app.close();
      await database.drop();
    }
  });

  it('writes no report and runs nothing on syncs that find a tidy mirror unchanged', async () => {
    const database = await createTestDatabase(kind);
    const { app } = await openTestForgesync(testConfig(database.url));
    try {
      const upstream = Upstream.create();
      await app.replication.addSource({ url: upstream.bare, name: 'quiet' });
      const first = await app.replication.sync('quiet');
      const reports = new HousekeepingRepository(app.kernel.database);
      const measuredAt = (await reports.find([first.id])).get(first.id)?.measuredAt;
      expect(measuredAt).toBeInstanceOf(Date);

      for (let round = 0; round < 3; round++) await app.replication.sync('quiet');

      expect((await reports.find([first.id])).get(first.id)?.measuredAt).toEqual(measuredAt);
      const checks = await metricValues(app, 'forgesync_housekeeping_checks_total');
      expect(checks.find((value) => value.labels.outcome === 'tidy')?.value).toBe(3);
      expect(git(first.registry.mirrorPath!, 'count-objects')).toMatch(/^0 objects/);
    } finally {
      await app.close();
      await database.drop();
    }
  });
});

describe('mirror housekeeping in the API', () => {
  it('is part of a source\'s detail, as in status --json', async () => {
    const admin = testSecret('ADMIN_TOKEN');
    const t = await startTestServer({ tokens: { admin } });
    try {
      const upstream = Upstream.create();
      const created = await t.server.inject({ method: 'POST', url: '/api/sources', headers: t.auth(admin), payload: { url: upstream.bare, name: 'shown' } });
      expect(created.statusCode, created.body).toBe(201);
      const pending = await t.server.inject({ method: 'GET', url: '/api/sources/shown', headers: t.auth(admin) });
      expect(pending.json().housekeeping).toEqual({ lastRunAt: null, packs: null, looseObjects: null, looseRefs: null, lastTasks: null });

      const synced = await t.app.replication.sync('shown');
      const detail = await t.server.inject({ method: 'GET', url: '/api/sources/shown', headers: t.auth(admin) });

      const sections = await t.app.replication.statusSections([synced]);
      expect(detail.json().housekeeping).toEqual((sourceStatusJson(synced, sections.get(synced.id)) as { housekeeping?: unknown }).housekeeping);
      expect(detail.json().housekeeping).toMatchObject({ lastRunAt: expect.any(String), packs: 1, looseObjects: 0, lastTasks: ['geometric-repack', 'commit-graph'] });
    } finally {
      await t.close();
    }
  });
});
