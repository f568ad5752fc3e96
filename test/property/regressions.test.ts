import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { KNOWN_PROTOCOLS, MAX_URL_LENGTH, validateRemoteUrl } from '../../src/git/url.js';
import type { Job } from '../../src/jobs/types.js';
import { validateJob } from '../../src/jobs/validate.js';
import { MAX_TTL_MS, validateDuration, validateFence, validateFloor, validateKey, validateTtl } from '../../src/leases/validate.js';
import { resolveInside } from '../../src/snapshots/paths.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { attempt, check, checkAsync } from './arbitraries.js';

/*
 * Bugs the property tests found, each stated as the property that now holds:
 * regression tests built to hit the bug's inputs directly.
 */

/** Cases per property of this file (each input is built to hit the bug). */
const REGRESSION_RUNS = 200;
/** HTTP requests of the API's known bug (each runs a failing local git clone). */
const REGRESSION_API_RUNS = 5;

describe('bugs the property tests found, fixed', () => {
  it('src/git/url.ts no longer: validateRemoteUrl returns URLs it refuses itself (the 2048 limit is checked before normalising; mirror.ts re-validates the stored URL at every sync)', () => {
    const growing = fc.oneof(
      // Percent-encoding: each "é" becomes "%C3%A9".
      fc.integer({ min: 400, max: 2000 - 20 }).map((n) => `https://example.com/${'é'.repeat(n)}`),
      // A relative local path gains the working directory.
      fc.integer({ min: MAX_URL_LENGTH - 10, max: MAX_URL_LENGTH }).map((n) => 'r'.repeat(n)),
    );
    check(
      fc.property(growing, (url) => {
        // Refused at once, or accepted for good: what is returned passes again, unchanged.
        const once = attempt(() => validateRemoteUrl(url, KNOWN_PROTOCOLS), /url/i);
        if (once.ok) expect(validateRemoteUrl(once.value, KNOWN_PROTOCOLS)).toBe(once.value);
      }),
      REGRESSION_RUNS,
    );
  });

  it('src/git/url.ts no longer: validateRemoteUrl accepts Unicode spaces and invisible or bidi-control characters in scp-like and ssh:// URLs and returns them raw', () => {
    const invisible = fc.constantFrom('\u1680', '\u2000', '\u2003', '\u200a', '\u200b', '\u202e', '\u202f', '\u205f', '\u3000');
    const url = fc.tuple(fc.constantFrom('git@github.com:acme/', 'ssh://git@github.com/acme/'), invisible).map(([prefix, char]) => `${prefix}widgets${char}.git`);
    check(
      fc.property(url, (candidate) => {
        expect(attempt(() => validateRemoteUrl(candidate, KNOWN_PROTOCOLS), /url/i).ok).toBe(false);
      }),
      REGRESSION_RUNS,
    );
  });

  describe('src/snapshots/paths.ts', () => {
    let base: string;
    let root: string;
    beforeAll(() => {
      base = mkdtempSync(join(tmpdir(), 'forgesync-prop-known-'));
      root = join(base, 'snapshot');
      mkdirSync(root);
      // A commit can carry links to nothing and link loops.
      symlinkSync('not-there', join(root, 'dangling-in'));
      symlinkSync('../outside/not-there', join(root, 'dangling-out'));
      symlinkSync('loop', join(root, 'loop'));
      symlinkSync('loop-b', join(root, 'loop-a'));
      symlinkSync('loop-a', join(root, 'loop-b'));
    });
    afterAll(() => rmSync(base, { recursive: true, force: true }));

    it('resolveInside no longer throws a plain ENOENT/ELOOP Error (not SnapshotPathEscapeError, an InvalidInputError) for a path through a dangling or looping link', () => {
      const path = fc
        .tuple(fc.constantFrom('dangling-in', 'dangling-out', 'loop', 'loop-a'), fc.array(fc.constantFrom('x', 'y', '.'), { maxLength: 2 }))
        .map(([link, rest]) => [link, ...rest].join('/'));
      check(
        fc.property(path, (candidate) => {
          attempt(() => resolveInside(root, candidate), /path|snapshot/i);
        }),
        REGRESSION_RUNS,
      );
    });

    it('resolveInside no longer throws a TypeError for an object whose toString is not a function (String(path) in the refusal)', () => {
      check(
        fc.property(fc.constantFrom('{"toString":null}', '{"toString":1}', '{"valueOf":{},"toString":[]}'), (json) => {
          attempt(() => resolveInside(root, JSON.parse(json) as string), /path|snapshot/i);
        }),
        REGRESSION_RUNS,
      );
    });
  });

  it('src/leases/validate.ts no longer: validateTtl, validateDuration, validateFence and validateFloor throw a TypeError (String(value) in the refusal) for an object whose toString is not a function', () => {
    const trap = fc.constantFrom('{"toString":null}', '{"toString":1}', '{"toString":"x","valueOf":{}}', '{"valueOf":1,"toString":[]}').map((json) => JSON.parse(json) as unknown);
    const validator = fc.constantFrom(
      (value: unknown) => validateTtl(value),
      (value: unknown) => validateDuration(value, 'waitMs', 0),
      (value: unknown) => validateFence(value),
      (value: unknown) => validateFloor(value),
    );
    check(
      fc.property(trap, validator, (value, validate) => {
        attempt(() => validate(value), /ttlMs|waitMs|fence|floor/);
      }),
      REGRESSION_RUNS,
    );
  });

  it('src/leases/validate.ts no longer: validateKey accepts lone surrogates, which PostgreSQL, MySQL and Redis store as U+FFFD: "k\\ud800" and "k\\udc00" are then one lease there (SQLite keeps them apart)', () => {
    const key = fc.tuple(fc.stringMatching(/^[a-z:]{1,20}$/), fc.integer({ min: 0xd800, max: 0xdfff })).map(([prefix, code]) => prefix + String.fromCharCode(code));
    check(
      fc.property(key, (candidate) => {
        const outcome = attempt(() => validateKey(candidate), /lease key/i);
        // An accepted key survives UTF-8, the encoding of every network backend.
        if (outcome.ok) expect(Buffer.from(outcome.value, 'utf8').toString('utf8')).toBe(outcome.value);
      }),
      REGRESSION_RUNS,
    );
  });

  it('src/jobs/validate.ts no longer: validateJob accepts a job without a kind or key (KIND/KEY.test(undefined) tests "undefined") and throws a TypeError for a bigint kind (JSON.stringify)', () => {
    const job = fc.constantFrom<unknown>({ key: '1' }, { kind: 'sync' }, {}, { kind: 'sync', key: 12345 }, { kind: 0n, key: '1' }, { kind: ['sync'], key: '1' });
    check(
      fc.property(job, (candidate) => {
        expect(attempt(() => validateJob(candidate as Job), /job/i).ok).toBe(false);
      }),
      REGRESSION_RUNS,
    );
  });

  it('src/kernel/settings.ts, src/replication/settings.ts no longer: duration settings have no upper bound (a lease ttl over 24 h that every lease refuses; a scheduler tick over 2^31-1 ms, which timers run after 1 ms)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-prop-known-config-'));
    try {
      const env = fc.oneof(
        fc.integer({ min: 25, max: 1000 }).map((hours) => ({ FORGESYNC_LEASE_TTL: `${hours}h` })),
        fc.integer({ min: 25, max: 365 }).map((days) => ({ FORGESYNC_SCHEDULER_TICK: `${days}d` })),
      );
      check(
        fc.property(env, (given) => {
          let config: ReturnType<typeof loadConfig> | undefined;
          try {
            config = loadConfig({ env: given, cwd: dir });
          } catch {
            return; // refused at start-up, as it should be
          }
          expect(config.leaseTtlMs).toBeLessThanOrEqual(MAX_TTL_MS);
          expect(() => validateTtl(config!.leaseTtlMs)).not.toThrow();
          expect(config.schedulerTickMs).toBeLessThanOrEqual(2 ** 31 - 1);
        }),
        REGRESSION_RUNS,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('src/snapshots/service.ts', () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer();
      // Upstreams that cannot be cloned: a local path that does not exist (nothing leaves the machine).
      await t.app.replication.addSource({ url: '/srv/nowhere/gone.git', name: 'gone' });
    });
    afterAll(async () => t?.close());

    it('POST /api/sources/:name/snapshots no longer answers 500 when the source has no mirror and its upstream cannot be cloned (the temporary clone\'s GitCommandError has no error kind)', async () => {
      const body = fc.record({ ref: fc.constantFrom('main', 'HEAD', 'v1.0', 'feature/x'), sync: fc.boolean(), waitMs: fc.integer({ min: 0, max: 500 }) });
      await checkAsync(
        fc.asyncProperty(body, async (payload) => {
          const response = await t.server.inject({ method: 'POST', url: '/api/sources/gone/snapshots', headers: t.auth(), payload });
          expect(response.statusCode, response.body).toBeLessThan(500);
        }),
        REGRESSION_API_RUNS,
      );
    });
  });
});
