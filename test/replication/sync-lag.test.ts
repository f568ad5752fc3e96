// The sync lag behind the alert ForgesyncSyncLagging: RegistryRepository.lag's one aggregate
// query on each registry dialect, and the gauges read from it at scrape time.
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { syncLagMetrics } from '../../src/replication/metrics.js';
import { RegistryRepository } from '../../src/replication/store/registry.js';
import { SourceRepository, type CreateSourceInput } from '../../src/replication/store/sources.js';
import type { Database } from '../../src/store/database.js';
import { postgresBackend, sqliteBackend, type StoreTarget } from '../store/backends.js';

const HOUR = 3_600_000;

describe.each([sqliteBackend, postgresBackend])('sync lag on $name', (backend) => {
  let target: StoreTarget;
  let database: Database;
  let sources: SourceRepository;
  let registry: RegistryRepository;

  beforeAll(async () => {
    target = await backend.fresh();
    database = await target.open();
    sources = new SourceRepository(database);
    registry = new RegistryRepository(database, { defaultIntervalMs: HOUR });
  });
  afterAll(async () => {
    await database?.close();
    await target?.dispose();
  });
  beforeEach(async () => {
    await database.db.deleteFrom('sources').execute();
  });

  const add = (name: string, input: Partial<CreateSourceInput> = {}) => sources.create({ name, url: `https://example.test/${name}.git`, ...input });
  /** Records a successful sync of `id` at `at`. */
  async function syncedAt(id: number, at: Date): Promise<void> {
    await registry.start(id, 1n, at);
    expect(await registry.finishSynced(id, 1n, { targetSeq: 1, checksum: 'c', verified: true, now: at })).toBe(true);
  }

  it('counts the interval sources whose last success is older than twice their interval, or never synced that long since added', async () => {
    const now = new Date(Date.now() + 10 * HOUR);
    const ago = (ms: number) => new Date(now.getTime() - ms);
    const { id: fresh } = await add('fresh');
    await syncedAt(fresh, ago(0.5 * HOUR));
    const { id: late } = await add('late', { intervalMs: 2 * HOUR });
    await syncedAt(late, ago(5 * HOUR));
    const { id: within } = await add('within', { intervalMs: 4 * HOUR });
    await syncedAt(within, ago(5 * HOUR));
    await add('never'); // default interval (1 h), added about 10 h before `now`
    // Left out: a cron source, a disabled one, one whose upstream is gone.
    await add('cron', { cron: '0 3 * * 0' });
    await add('disabled', { enabled: false });
    const { id: gone } = await add('gone');
    await registry.start(gone, 1n, ago(9 * HOUR));
    await registry.finishFailed(gone, 1n, { error: 'repository not found', nextRetryAt: null, missing: true, now: ago(9 * HOUR) });

    const lag = await registry.lag(now);
    expect(lag.overdue).toBe(2); // late and never
    // The oldest is `never`, since its creation (about 10 h before `now`, this test's own run time more).
    expect(lag.oldestSuccessAgeMs).toBeGreaterThanOrEqual(10 * HOUR - 1000);
    expect(lag.oldestSuccessAgeMs).toBeLessThan(10 * HOUR + 60_000);
  });

  it('says nothing is overdue, and no age, when no source is scheduled by interval', async () => {
    await add('cron', { cron: '*/5 * * * *' });
    expect(await registry.lag(new Date(Date.now() + 100 * HOUR))).toEqual({ overdue: 0, oldestSuccessAgeMs: 0 });
  });

  it('exports the lag as gauges at scrape time: a source whose 1 s interval went by twice shows up', async () => {
    const metrics = new Registry();
    syncLagMetrics(metrics, () => registry.lag());
    const { id } = await add('quick', { intervalMs: 1000 });
    await syncedAt(id, new Date(Date.now() - 30_000));
    await syncedAt((await add('hourly')).id, new Date());
    const text = await metrics.metrics();
    expect(text).toMatch(/^forgesync_sources_overdue 1$/m);
    const age = Number(/^forgesync_sync_oldest_success_age_seconds (\S+)$/m.exec(text)?.[1]);
    expect(age).toBeGreaterThanOrEqual(30);
    expect(age).toBeLessThan(90);
  });
});
