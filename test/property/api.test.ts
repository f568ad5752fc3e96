import { createRequire, syncBuiltinESMExports } from 'node:module';
import type { InjectOptions } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCron, parseInterval } from '../../src/replication/schedule.js';
import { validateRemoteUrl } from '../../src/git/url.js';
import { validateSourceName } from '../../src/replication/names.js';
import { signBody } from '../../src/replication/webhooks/signature.js';
import { validateRevision } from '../../src/snapshots/revision.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { SECRETS, WEBHOOK_ENV } from '../replication/webhooks/fixtures.js';
import { checkAsync, hostileString, piece, unknownValue } from './arbitraries.js';
import { testSecret } from '../support/secrets.js';

/*
 * The HTTP boundary: generated bodies, paths and queries for the sources,
 * snapshots and webhook routes (through Fastify's inject) answer 4xx with
 * `{ error, message }` (never 5xx), store nothing and start no process.
 */

/** HTTP requests per property of this file. */
const CREATE_RUNS = 1_000;
const UPDATE_RUNS = 1_000;
const SOURCE_READ_RUNS = 1_000;
const SNAPSHOT_RUNS = 1_000;
const WEBHOOK_RUNS = 1_000;

const PROTOCOLS = new Set(['https', 'ssh', 'http', 'file']); // what startTestServer allows
const SEED = 'seed';
const SEED_GITHUB = 'seed-gh';

// ---------------------------------------------------------------- processes

/** Every child process this test process starts (git or anything else), by wrapping node:child_process itself. */
const spawned: string[] = [];

const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
const originals = new Map<string, unknown>();
function watchProcesses(): void {
  for (const name of ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync', 'fork']) {
    const original = childProcess[name] as (...args: unknown[]) => unknown;
    originals.set(name, original);
    childProcess[name] = (...args: unknown[]) => {
      spawned.push(`${name} ${String(args[0])}`);
      return original(...args);
    };
  }
  syncBuiltinESMExports();
}
function unwatchProcesses(): void {
  for (const [name, original] of originals) childProcess[name] = original;
  syncBuiltinESMExports();
}

// ---------------------------------------------------------------- oracles

const validates = (parse: () => unknown): boolean => {
  try {
    parse();
    return true;
  } catch {
    return false;
  }
};
const isString = (value: unknown, min: number, max: number): value is string => typeof value === 'string' && value.length >= min && value.length <= max;
const goodUrl = (value: unknown) => isString(value, 1, 2000) && validates(() => validateRemoteUrl(value, PROTOCOLS));
const goodName = (value: unknown) => isString(value, 1, 200) && validates(() => validateSourceName(value));
const goodInterval = (value: unknown) => isString(value, 1, 20) && validates(() => parseInterval(value));
const goodCron = (value: unknown) => isString(value, 1, 200) && validates(() => parseCron(value));
const goodRef = (value: unknown) => isString(value, 1, 255) && validates(() => validateRevision(value));

// ---------------------------------------------------------------- generators

const urlValue = fc.oneof(
  fc.constantFrom('https://example.com/ok.git', 'git@example.com:o/r.git', '/srv/nowhere/repo.git', '-uhttps://x', 'ext::sh -c id', 'https://u:pw@example.com/x', 'ftp://x/y', 'fd::1', 'https://example.com/a b', 'https://example.com/a..', ''),
  hostileString({ maxLength: 10, long: 2500 }),
  unknownValue,
);
const nameValue = fc.oneof(fc.constantFrom('ok-name', SEED, 'SEED', SEED_GITHUB, '..', 'a..b', '-x', '.x', 'a/b', 'a\\b', '', 'x'.repeat(101)), hostileString({ maxLength: 8 }), unknownValue);
const intervalValue = fc.oneof(fc.constantFrom('30m', '1h', '0', '999ms', '400d', '1e3', '-1s', '', 'x'.repeat(21)), hostileString({ maxLength: 6 }), unknownValue);
const cronValue = fc.oneof(fc.constantFrom('*/5 * * * *', '0 0 * * *', '* * *', '61 * * * *', '@reboot', ''), hostileString({ maxLength: 8 }), unknownValue);
const credentialValue = fc.oneof(fc.constantFrom('PROPERTY_NOT_DEFINED', 'env:GITHUB_TOKEN', 'file:/etc/passwd', '', null), hostileString({ maxLength: 8 }), unknownValue);
const extraKey = fc.oneof(fc.constant(undefined), fc.constantFrom('__proto__', 'constructor', 'id', 'mirrorPath', 'state', 'fence', 'Url', 'url '));

/** Text for a field that the request schema lets through (type and length), so that the domain's own check decides. */
function textFor(field: string): fc.Arbitrary<string> {
  const max = field === 'url' ? 2000 : field === 'name' ? 100 : field === 'interval' ? 20 : field === 'cron' ? 200 : 300;
  const pieces = {
    url: ['-uhttps://x', 'ext::sh -c id', 'https://u:pw@example.com/x', 'ftp://x/y', 'fd::1', 'https://example.com/a b', 'git@-oProxyCommand=x:r', 'ssh://-oProxyCommand=x/r', `https://${testSecret('PROPERTY_URL_TOKEN', 'ghp_')}@github.com/x`, 'https://example.com/a..'],
    name: ['..', 'a..b', '-x', '.x', 'a/b', 'a\\b', 'a b', SEED, 'SEED', SEED_GITHUB.toUpperCase()],
    interval: ['0', '999ms', '400d', '1e3', '-1s', '1 h', '1h-1m', '0x10', '1w'],
    cron: ['* * *', '61 * * * *', '@reboot', '* * * * * * *', '*/0 * * * *', '0 0 31 2 *'],
    credentialRef: ['PROPERTY_NOT_DEFINED', 'env:GITHUB_TOKEN', 'file:/etc/passwd', 'a-b', '9abc', 'x'.repeat(65)],
  }[field]!;
  return fc.oneof(fc.constantFrom(...pieces), hostileString({ maxLength: 10, long: max })).map((text) => text.slice(0, max)).filter((text) => text.length > 0);
}

/** A JSON body, or raw text sent as JSON (broken, empty, not an object). */
function asPayload(body: Record<string, unknown>, raw: string | undefined): string {
  if (raw !== undefined) return raw;
  return JSON.stringify(body, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}
const rawBody = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom('', '{', 'null', '[]', '"x"', '1', '{"url":', '{"url":"a"}}', '\ufeff{}'), hostileString({ maxLength: 10 }), fc.json({ maxDepth: 2 })) },
);

/** `s` with lone surrogates replaced, so encodeURIComponent accepts it. */
const wellFormed = (s: string) => Buffer.from(s, 'utf8').toString('utf8');
const pathSegment = fc.oneof(
  { weight: 3, arbitrary: hostileString({ maxLength: 8, long: 300 }).map((s) => encodeURIComponent(wellFormed(s))) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom('%', '%zz', '%2e%2e', '..', '.', '%2F', '%00', '%0a', '%25', ';x', 'a', '~', '%C0%AE', '%ff'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('')) },
);
const queryString = fc.oneof(
  fc.constant(''),
  fc.array(
    fc.tuple(
      fc.constantFrom('state', 'search', 'limit', 'offset', 'attempts', 'ref', 'path', 'x', '', 'limit[]', '__proto__'),
      fc.oneof(fc.constantFrom('pending', 'failed', 'bogus', '0', '-1', '1', '50', '500', '501', '1e3', '1.5', 'NaN', '', 'x'.repeat(201)), hostileString({ maxLength: 6 }).map((s) => encodeURIComponent(wellFormed(s))), pathSegment),
    ),
    { maxLength: 4 },
  ).map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
);

// ---------------------------------------------------------------- checks

describe('HTTP API under generated input', () => {
  let t: TestServer;
  let gitCalls: string[];

  /** The registry as the API would show it, for comparing before and after. */
  async function registryState(): Promise<string> {
    const sources = await t.app.replication.listSources();
    return JSON.stringify(sources.map((s) => [s.id, s.name, s.url, s.credentialRef, s.intervalMs, s.cron, s.enabled, s.registry.requestedSeq, s.registry.state]));
  }

  beforeAll(async () => {
    t = await startTestServer({ env: WEBHOOK_ENV });
    await t.app.replication.addSource({ url: '/srv/nowhere/seed.git', name: SEED, interval: '1h' });
    await t.app.replication.addSource({ url: 'https://github.com/acme/seed-gh.git', name: SEED_GITHUB });
    gitCalls = [];
    const runner = t.app.runner;
    const run = runner.run.bind(runner);
    const start = runner.start.bind(runner);
    runner.run = async (args, options) => {
      gitCalls.push(`run ${args.join(' ')}`);
      return run(args, options);
    };
    runner.start = (args, options) => {
      gitCalls.push(`start ${args.join(' ')}`);
      return start(args, options);
    };
    watchProcesses();
  });
  afterAll(async () => {
    unwatchProcesses();
    await t?.close();
  });

  /** Sends `request` and checks the boundary's contract: a 4xx (or `allowed`) answer in JSON, the registry unchanged, no process. */
  async function expectRefused(request: InjectOptions, allowed: (status: number) => boolean = () => false): Promise<void> {
    const before = await registryState();
    const response = await t.server.inject(request);
    const described = `${request.method} ${request.url} ${String(request.payload ?? '').slice(0, 300)} → ${response.statusCode} ${response.body.slice(0, 300)}`;
    expect(response.statusCode < 500, described).toBe(true);
    if (!allowed(response.statusCode)) {
      expect(response.statusCode >= 400 && response.statusCode < 500, described).toBe(true);
      const body = response.json() as { error?: unknown; message?: unknown };
      expect(typeof body.error, described).toBe('string');
      expect(typeof body.message, described).toBe('string');
    }
    expect(await registryState(), `${described}: the registry changed`).toBe(before);
    expect(gitCalls, described).toEqual([]);
    expect(spawned, described).toEqual([]);
  }

  it(`POST /api/sources: ${CREATE_RUNS} bad bodies → 4xx, nothing stored, no process`, async () => {
    const anyBody = fc.record(
      { url: urlValue, name: nameValue, interval: intervalValue, cron: cronValue, credentialRef: credentialValue, extra: extraKey, extraValue: unknownValue },
      { requiredKeys: [] },
    );
    // Mostly a good body with one field replaced by text that passes the schema's types and lengths, to reach the domain's checks.
    const oneBadField = fc
      .tuple(fc.constantFrom('url', 'name', 'interval', 'cron', 'credentialRef'), fc.boolean())
      .chain(([field, withName]) =>
        textFor(field).map((value) => ({ url: 'https://example.com/ok.git', ...(withName ? { name: 'ok-name' } : {}), [field]: value }) as Record<string, unknown>),
      );
    const body = fc.oneof({ weight: 2, arbitrary: oneBadField }, { weight: 1, arbitrary: anyBody });
    await checkAsync(
      fc.asyncProperty(body, rawBody, async ({ extra, extraValue, ...fields }, raw) => {
        const sent: Record<string, unknown> = { ...fields };
        if (typeof extra === 'string') Object.defineProperty(sent, extra, { value: extraValue ?? 1, enumerable: true, configurable: true, writable: true });
        const payload = asPayload(sent, raw);
        // Judged on what the server receives (undefined fields vanish, bigints were sent as text).
        const got = wire(payload);
        const good =
          got !== undefined &&
          onlyKeys(got, ['url', 'name', 'interval', 'cron', 'credentialRef']) &&
          goodUrl(got.url) &&
          (!('name' in got) || goodName(got.name)) &&
          (!('interval' in got) || goodInterval(got.interval)) &&
          (!('cron' in got) || goodCron(got.cron)) &&
          !('interval' in got && 'cron' in got) &&
          !('credentialRef' in got); // no credential is defined here: any reference is refused
        fc.pre(!good);
        await expectRefused({ method: 'POST', url: '/api/sources', headers: t.auth(), payload });
      }),
      CREATE_RUNS,
    );
  });

  it(`PATCH /api/sources/:name: ${UPDATE_RUNS} bad bodies and names → 4xx, nothing stored, no process`, async () => {
    const anyBody = fc.record(
      { url: urlValue, interval: intervalValue, cron: cronValue, credentialRef: credentialValue, enabled: fc.oneof(fc.boolean(), unknownValue), extra: extraKey, extraValue: unknownValue },
      { requiredKeys: [] },
    );
    const oneBadField = fc
      .tuple(fc.constantFrom('url', 'interval', 'cron', 'credentialRef'), fc.boolean())
      .chain(([field, withEnabled]) => textFor(field).map((value) => ({ ...(withEnabled ? { enabled: false } : {}), [field]: value }) as Record<string, unknown>));
    const body = fc.oneof({ weight: 2, arbitrary: oneBadField }, { weight: 1, arbitrary: anyBody });
    const target = fc.oneof({ weight: 4, arbitrary: fc.constant(SEED) }, { weight: 1, arbitrary: pathSegment });
    await checkAsync(
      fc.asyncProperty(body, rawBody, target, async ({ extra, extraValue, ...fields }, raw, name) => {
        const sent: Record<string, unknown> = { ...fields };
        if (typeof extra === 'string') Object.defineProperty(sent, extra, { value: extraValue ?? 1, enumerable: true, configurable: true, writable: true });
        const payload = asPayload(sent, raw);
        const got = wire(payload);
        const good =
          isSeed(name) &&
          got !== undefined &&
          onlyKeys(got, ['url', 'interval', 'cron', 'credentialRef', 'enabled']) &&
          Object.keys(got).length > 0 &&
          (!('url' in got) || goodUrl(got.url)) &&
          (!('interval' in got) || goodInterval(got.interval)) &&
          (!('cron' in got) || goodCron(got.cron)) &&
          !('interval' in got && 'cron' in got) &&
          (!('credentialRef' in got) || got.credentialRef === '' || got.credentialRef === null) &&
          (!('enabled' in got) || typeof got.enabled === 'boolean');
        fc.pre(!good);
        await expectRefused({ method: 'PATCH', url: `/api/sources/${name}`, headers: t.auth(), payload });
      }),
      UPDATE_RUNS,
    );
  });

  it(`GET and DELETE /api/sources[/:name]: ${SOURCE_READ_RUNS} generated paths and queries → 200 or 4xx, nothing stored, no process`, async () => {
    const request = fc.oneof(
      queryString.map((query) => ({ method: 'GET' as const, url: `/api/sources${query}` })),
      fc.tuple(fc.oneof(fc.constantFrom(SEED, SEED_GITHUB), pathSegment), queryString).map(([name, query]) => ({ method: 'GET' as const, url: `/api/sources/${name}${query}` })),
      // DELETE of names that are not the seeds' (case-insensitively): a refusal or 404, never a removal.
      pathSegment
        .filter((name) => !isSeed(name))
        .map((name) => ({ method: 'DELETE' as const, url: `/api/sources/${name}` })),
    );
    await checkAsync(
      fc.asyncProperty(request, async ({ method, url }) => {
        await expectRefused({ method, url, headers: t.auth() }, (status) => method === 'GET' && status === 200);
      }),
      SOURCE_READ_RUNS,
    );
  });

  it(`snapshot routes: ${SNAPSHOT_RUNS} generated refs, paths, bodies and handles → 4xx, nothing stored, no process`, async () => {
    const refValue = fc.oneof(fc.constantFrom('main', 'HEAD', '-x', '--output=/tmp/x', 'a..b', 'main:README', 'main^', 'main~1', 'HEAD@{1}', '@', '', 'x'.repeat(256)), hostileString({ maxLength: 8 }), unknownValue);
    const snapshotBody = fc.record(
      { ref: refValue, sync: fc.oneof(fc.boolean(), unknownValue), waitMs: fc.oneof(fc.integer({ min: -1, max: 700_000 }), unknownValue), holdMs: fc.oneof(fc.integer({ min: 0, max: 10 ** 9 }), unknownValue), extra: extraKey },
      { requiredKeys: [] },
    );
    const zodOk = (fields: Record<string, unknown>) =>
      (!('sync' in fields) || typeof fields.sync === 'boolean') &&
      (!('waitMs' in fields) || (Number.isInteger(fields.waitMs) && (fields.waitMs as number) >= 0 && (fields.waitMs as number) <= 600_000)) &&
      (!('holdMs' in fields) || (Number.isInteger(fields.holdMs) && (fields.holdMs as number) >= 1000 && (fields.holdMs as number) <= 7 * 24 * 3600_000));
    const refText = fc.oneof(fc.constantFrom('-x', '--output=/tmp/x', 'a..b', 'main:README', 'main^', 'main~1', 'HEAD@{1}', '@', 'a b', 'a.lock', '/main', 'main/'), hostileString({ maxLength: 8, long: 255 })).filter((text) => text.length > 0 && text.length <= 255);
    const request = fc.oneof(
      // The seed's ref refused by the domain's check (the schema lets it through).
      fc.tuple(refText, fc.constantFrom(SEED, SEED_GITHUB)).map(([ref, name]) => ({ skip: goodRef(ref), request: { method: 'POST' as const, url: `/api/sources/${name}/snapshots`, payload: JSON.stringify({ ref }) } })),
      // Materialise: on the seed only with a body that cannot pass (a valid one would clone); elsewhere anything.
      fc.tuple(fc.oneof(fc.constant(SEED), pathSegment), snapshotBody, rawBody).map(([name, { extra, ...fields }, raw]) => {
        const sent: Record<string, unknown> = { ...fields };
        if (extra !== undefined) sent[extra === '__proto__' ? 'proto' : extra] = 1;
        const payload = asPayload(sent, raw);
        const got = wire(payload);
        const good = got !== undefined && onlyKeys(got, ['ref', 'sync', 'waitMs', 'holdMs']) && goodRef(got.ref) && zodOk(got);
        return { skip: isSeed(name) && good, request: { method: 'POST' as const, url: `/api/sources/${name}/snapshots`, payload } };
      }),
      // Read a file of a commit: the seed has no mirror, so nothing can be read and no git runs.
      fc.tuple(fc.oneof(fc.constantFrom(SEED, SEED_GITHUB), pathSegment), queryString).map(([name, query]) => ({ skip: false, request: { method: 'GET' as const, url: `/api/sources/${name}/contents${query}` } })),
      pathSegment.map((handle) => ({ skip: false, request: { method: 'DELETE' as const, url: `/api/snapshots/${handle}` } })),
    );
    await checkAsync(
      fc.asyncProperty(request, async ({ skip, request: { method, url, ...rest } }) => {
        fc.pre(!skip);
        await expectRefused({ method, url, headers: t.auth(), ...rest });
      }),
      SNAPSHOT_RUNS,
    );
  });

  /** Signed webhook bodies: JSON of any shape, push-like payloads with hostile repository fields, broken JSON, form-encoded. */
  const repository = fc.record(
    {
      full_name: fc.oneof(fc.constantFrom('acme/other', 'acme/seed-gh.git.x', '../..', ''), hostileString({ maxLength: 6 }), unknownValue),
      clone_url: fc.oneof(fc.constantFrom('https://github.com/acme/other.git', '-x', 'ext::sh'), hostileString({ maxLength: 8 }), unknownValue),
      html_url: fc.oneof(hostileString({ maxLength: 8 }), unknownValue),
      ssh_url: fc.oneof(hostileString({ maxLength: 8 }), unknownValue),
      name: fc.oneof(piece, unknownValue),
      owner: fc.oneof(fc.record({ login: fc.oneof(piece, unknownValue), name: fc.oneof(piece, unknownValue) }), unknownValue),
      default_branch: fc.oneof(piece, unknownValue),
    },
    { requiredKeys: [] },
  );
  const webhookBody = fc.oneof(
    fc.record({ ref: fc.oneof(piece, unknownValue), repository: fc.oneof(repository, unknownValue), action: fc.oneof(fc.constantFrom('renamed', 'transferred', 'deleted', 'edited', 'created'), unknownValue), changes: unknownValue, project: fc.oneof(repository, unknownValue), event_name: fc.oneof(fc.constantFrom('push', 'tag_push', 'repository_update'), unknownValue) }, { requiredKeys: [] }).map((value) => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))),
    fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
    fc.oneof(fc.constantFrom('', '{', '[', 'null', '{"repository":'), hostileString({ maxLength: 10 })),
  );

  it(`POST /hooks/github and /hooks/gitlab: ${WEBHOOK_RUNS} signed generated deliveries (either receiver) → 2xx or 4xx, nothing stored, no process`, async () => {
    const delivery = fc.oneof(
      fc.tuple(fc.constantFrom('push', 'create', 'delete', 'repository', 'ping', 'issues', ''), webhookBody, fc.boolean()).map(([event, body, form]): InjectOptions => {
        const payload = form ? `payload=${encodeURIComponent(wellFormed(body))}` : body;
        return {
          method: 'POST',
          url: '/hooks/github',
          headers: {
            'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json',
            'x-github-event': event,
            'x-github-delivery': 'd-1',
            'x-hub-signature-256': signBody(SECRETS.github, payload),
          },
          payload,
        };
      }),
      fc.tuple(fc.constantFrom('Push Hook', 'Tag Push Hook', 'System Hook', 'Note Hook', ''), webhookBody).map(([hook, body]): InjectOptions => ({
        method: 'POST',
        url: '/hooks/gitlab',
        headers: { 'content-type': 'application/json', 'x-gitlab-event': hook, 'x-gitlab-token': SECRETS.gitlab },
        payload: body,
      })),
    );
    await checkAsync(
      fc.asyncProperty(delivery, async (request) => {
        await expectRefused(request, (status) => status >= 200 && status < 300);
      }),
      WEBHOOK_RUNS,
    );
  });
});

/** The JSON object the server parses from `payload`, if it is one. */
function wire(payload: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(payload);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function onlyKeys(object: Record<string, unknown>, keys: string[]): boolean {
  return Object.keys(object).every((key) => keys.includes(key));
}

/** Whether a path segment names one of the seed sources (names compare case-insensitively). */
function isSeed(segment: string): boolean {
  return [SEED, SEED_GITHUB].includes(safeDecode(segment).toLowerCase());
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
