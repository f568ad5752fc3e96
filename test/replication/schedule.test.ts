import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/util/backoff.js';
import { InvalidScheduleError, nextCronRun, parseCron, parseDuration, parseInterval } from '../../src/replication/schedule.js';
import { nameFromUrl, validateSourceName } from '../../src/replication/names.js';
import { loadConfig } from '../../src/app/config.js';
import { ConfigError } from '../../src/config/errors.js';

describe('schedules', () => {
  it('parses intervals and rejects nonsense', () => {
    expect(parseInterval('90s')).toBe(90_000);
    expect(parseInterval('1h30m')).toBe(5_400_000);
    expect(parseInterval('2d')).toBe(172_800_000);
    expect(parseDuration('250ms', 10)).toBe(250);
    for (const bad of ['soon', '', '1x', '-5m', '0s', '400d']) expect(() => parseInterval(bad)).toThrow(InvalidScheduleError);
  });

  it('validates cron expressions and finds the next run', () => {
    expect(parseCron('*/15 * * * *')).toBe('*/15 * * * *');
    expect(() => parseCron('every tuesday')).toThrow(InvalidScheduleError);
    const next = nextCronRun('0 * * * *', new Date('2026-01-01T10:20:00Z'));
    expect(next?.getUTCMinutes()).toBe(0);
    expect(next!.getTime()).toBeGreaterThan(new Date('2026-01-01T10:20:00Z').getTime());
  });
});

describe('backoff', () => {
  const policy = { baseMs: 1000, maxMs: 60_000 };
  it('doubles per failure within [d/2, d] and stops at the cap', () => {
    expect(backoffDelay(1, policy, () => 0)).toBe(500);
    expect(backoffDelay(1, policy, () => 1)).toBe(1000);
    expect(backoffDelay(3, policy, () => 1)).toBe(4000);
    expect(backoffDelay(3, policy, () => 0)).toBe(2000);
    expect(backoffDelay(50, policy, () => 1)).toBe(60_000);
    expect(backoffDelay(50, policy, () => 0)).toBe(30_000);
  });
});

describe('source names', () => {
  it('accepts plain names and refuses traversal', () => {
    expect(validateSourceName('repo.one_2-x')).toBe('repo.one_2-x');
    expect(validateSourceName('team-a/api')).toBe('team-a/api');
    expect(validateSourceName('group/sub.group/project-1')).toBe('group/sub.group/project-1');
    for (const bad of ['../x', 'a/../b', 'a//b', '/a', 'a/', 'a/.git', '.hidden', '', 'x'.repeat(101), `${'x/'.repeat(100)}x`, 'a..b', '-flag', 'a/-b', 'a\\b']) {
      expect(() => validateSourceName(bad)).toThrow(/source name/);
    }
    expect(nameFromUrl('https://github.com/org/Repo.git')).toBe('Repo');
    expect(nameFromUrl('git@github.com:org/thing.git')).toBe('thing');
    expect(nameFromUrl('/srv/git/../x/')).toBe('x');
  });
});

describe('configuration', () => {
  it('reports every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({
        cwd: '/tmp',
        env: { FORGESYNC_LEASE_URL: 'zk://x', FORGESYNC_MAX_CONCURRENT_SYNCS: '0', FORGESYNC_GIT_PROTOCOLS: 'ftp', FORGESYNC_LEASE_TTL: 'soon' },
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/FORGESYNC_LEASE_URL[\s\S]*FORGESYNC_GIT_PROTOCOLS|FORGESYNC_GIT_PROTOCOLS[\s\S]*FORGESYNC_LEASE_URL/);
  });

  it('defaults to the embedded SQLite file in ./data for registry and leases', () => {
    const config = loadConfig({ cwd: '/srv/app', env: {} });
    expect(config.dataDir).toBe('/srv/app/data');
    expect(config.databaseUrl).toBe('sqlite:/srv/app/data/forgesync.db');
    expect(config.leaseUrl).toBe(config.databaseUrl);
    expect(config.gitProtocols).toBe('https,ssh');
  });

  it('reads the snapshot budget and hold, sizes with units', () => {
    const defaults = loadConfig({ cwd: '/srv/app', env: {} });
    expect(defaults).toMatchObject({ snapshotsDir: '/srv/app/data/snapshots', snapshotMaxCount: 50, snapshotMaxBytes: 10 * 2 ** 30, snapshotHoldMs: 3_600_000 });
    const set = loadConfig({
      cwd: '/srv/app',
      env: { FORGESYNC_SNAPSHOT_MAX_COUNT: '7', FORGESYNC_SNAPSHOT_MAX_BYTES: '1.5GB', FORGESYNC_SNAPSHOT_HOLD: '90s' },
    });
    expect(set).toMatchObject({ snapshotMaxCount: 7, snapshotMaxBytes: 1_500_000_000, snapshotHoldMs: 90_000 });
    expect(loadConfig({ cwd: '/', env: { FORGESYNC_SNAPSHOT_MAX_BYTES: '512' } }).snapshotMaxBytes).toBe(512);
    let error: unknown;
    try {
      loadConfig({ cwd: '/', env: { FORGESYNC_SNAPSHOT_MAX_BYTES: 'lots', FORGESYNC_SNAPSHOT_MAX_COUNT: '0' } });
    } catch (caught) {
      error = caught;
    }
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(/^snapshotMaxCount \(FORGESYNC_SNAPSHOT_MAX_COUNT\): must be at least 1/),
      expect.stringMatching(/^snapshotMaxBytes \(FORGESYNC_SNAPSHOT_MAX_BYTES\): must be a size like/),
    ]);
  });
});
