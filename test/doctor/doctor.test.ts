import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { Forgesync } from '../../src/app/forgesync.js';
import { createLogger } from '../../src/logging/logger.js';
import { clockCheck } from '../../src/doctor/database-checks.js';
import { diskStatus, DISK_THRESHOLDS } from '../../src/doctor/disk-checks.js';
import { tracingCheck } from '../../src/doctor/exposure-checks.js';
import { runDoctor } from '../../src/doctor/runner.js';
import type { CheckResult, DoctorReport } from '../../src/doctor/types.js';
import { freePort } from '../support/free-port.js';
import { MYSQL_URL } from '../leases/backends.js';
import { POSTGRES_URL } from '../store/backends.js';
import { testSecret } from '../support/secrets.js';
import { fullFilesystem, healthySetup, NATS_URL, type HealthySetup } from './setup.js';
import { RedisInstance } from '../support/cluster/services.js';

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));

/** `forgesync doctor --json` as an operator runs it (the CLI as built by `npm run build`), in an environment without FORGESYNC_* variables. */
async function doctorCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('FORGESYNC_')));
  const child = spawn(process.execPath, [CLI, ...args, 'doctor', '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

function check(report: DoctorReport, name: string): CheckResult {
  const found = report.checks.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no check named ${name} in ${report.checks.map((candidate) => candidate.name).join(', ')}`);
  return found;
}

let setup: HealthySetup;

beforeAll(async () => {
  setup = await healthySetup();
});

afterAll(async () => {
  await setup?.dispose();
});

describe('forgesync doctor', () => {
  it('finds a healthy setup healthy: every check ok, exit 0, the JSON report on stdout', async () => {
    const { code, stdout, stderr } = await doctorCli(['--config', setup.configFile]);
    const report = JSON.parse(stdout) as DoctorReport;
    expect(report.checks.filter((result) => result.status !== 'ok'), stderr).toEqual([]);
    expect(report.ok).toBe(true);
    expect(code).toBe(0);
    expect(check(report, 'database').detail).toMatch(/^PostgreSQL \d+/);
    expect(check(report, 'clock').detail).toMatch(/database clock (ahead|behind) by \d+ ms/);
    expect(check(report, 'redis:jobs+leases').detail).toMatch(/^Redis \d+\.\d+/);
    expect(check(report, 'redis:jobs+leases:maxmemory-policy').detail).toContain('noeviction');
    expect(check(report, 'nats:127.0.0.1:4222').detail).toMatch(/^NATS \d+\.\d+/);
    expect(check(report, 'feed:changes:stream').detail).toMatch(/captured by stream doctor_/);
    expect(check(report, 'git').detail).toMatch(/^git \d+\.\d+/);
    expect(check(report, 'git:features').status).toBe('ok');
    expect(check(report, 'disk:data-dir').detail).toContain(setup.load().dataDir);
    expect(check(report, 'disk:shard:b').detail).toMatch(new RegExp(`^${setup.dir}/shard-b: .* free of `));
    expect(check(report, 'disk:shard:c').detail).toMatch(/^on elsewhere\.example, not this machine/);
    expect(check(report, 'credential:forge').detail).toBe('token, bound to git.example.com');
    expect(check(report, 'credential:forge:source:widgets').detail).toContain('git.example.com');
    expect(check(report, 'egress').detail).toContain('127.0.0.1/32');
    for (const endpoint of ['/hooks/github', '/hooks/gitlab', '/hooks/generic/:source']) expect(check(report, `webhook:${endpoint}`).detail).toMatch(/^secret set/);
    // Names and hosts only: no secret of the setup appears anywhere in the report.
    const secrets = JSON.parse(readFileSync(setup.secretsFile, 'utf8')) as { forge: { token: string } };
    expect(stdout).not.toContain(secrets.forge.token);
  });

  it('reads the embedded default without creating it, then the SQLite file serve made', async () => {
    const dataDir = join(setup.dir, 'embedded');
    const load = () => loadConfig({ env: {}, overrides: { dataDir, githubWebhookSecret: testSecret('DOCTOR_GITHUB') } });
    const before = await runDoctor({ load, timeoutMs: 5_000 });
    expect(check(before, 'database')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^SQLite 3\.\d+.*does not exist yet/) });
    expect(existsSync(join(dataDir, 'forgesync.db'))).toBe(false);
    expect(check(before, 'leases').detail).toBe('in the registry database');
    expect(check(before, 'clock').detail).toContain('one clock');
    expect(before.checks.some((result) => result.name.startsWith('redis') || result.name.startsWith('nats'))).toBe(false);
    // Unset webhook secrets warn; warnings alone leave the report ok.
    expect(check(before, 'webhook:/hooks/gitlab').status).toBe('warn');
    expect(check(before, 'webhook:/hooks/github').status).toBe('ok');
    expect(before.ok).toBe(true);
    const app = await Forgesync.open(load(), { logger: createLogger({ level: 'silent' }) });
    await app.close();
    const after = await runDoctor({ load, timeoutMs: 5_000 });
    expect(check(after, 'database').detail).toMatch(new RegExp(`^SQLite 3\\.\\d+\\.\\d+ at sqlite:${dataDir}/forgesync.db$`));
  });

  it('fails a Redis whose maxmemory-policy evicts (allkeys-lru), saying why and what to run', async () => {
    const redis = await RedisInstance.start({ args: ['--maxmemory-policy', 'allkeys-lru'] });
    try {
      const report = await runDoctor({ load: () => setup.load({ jobsUrl: `${redis.url}/0?prefix=doctor` }), timeoutMs: 5_000 });
      const policy = check(report, 'redis:jobs:maxmemory-policy');
      expect(policy.status).toBe('fail');
      expect(policy.detail).toContain('allkeys-lru');
      expect(policy.detail).toContain('queued jobs');
      expect(policy.hint).toContain('CONFIG SET maxmemory-policy noeviction');
      // The leases stay on the healthy Redis, which passes.
      expect(check(report, 'redis:leases:maxmemory-policy').status).toBe('ok');
      expect(report.ok).toBe(false);
    } finally {
      await redis.stop();
    }
  });

  it('fails a data directory on a full filesystem', async () => {
    const full = fullFilesystem(setup.dir);
    if (!full) {
      // Not root, or no mount allowed: the thresholds on a filesystem with 4 KiB of 1 MiB free.
      expect(diskStatus({ totalBytes: 1024 ** 2, freeBytes: 4096, totalInodes: 1000, freeInodes: 999 }).status).toBe('fail');
      return;
    }
    try {
      const report = await runDoctor({ load: () => setup.load({ dataDir: full.dir }), timeoutMs: 5_000 });
      const disk = check(report, 'disk:data-dir');
      expect(disk.status).toBe('fail');
      expect(disk.detail).toContain(full.dir);
      expect(disk.detail).toMatch(/100% used|under 5% free/);
      expect(disk.hint).toContain('FORGESYNC_DATA_DIR');
      expect(report.ok).toBe(false);
    } finally {
      full.unmount();
    }
  });

  it('fails a credential bound to no host, and the source that names it', async () => {
    const healthy = readFileSync(setup.secretsFile, 'utf8');
    writeFileSync(setup.secretsFile, JSON.stringify({ forge: { token: testSecret('DOCTOR_TOKEN'), hosts: [] } }));
    try {
      const report = await runDoctor({ load: () => setup.load(), timeoutMs: 5_000 });
      const file = check(report, 'credentials');
      expect(file.status).toBe('fail');
      expect(file.detail).toContain('credential "forge" needs the list of hosts');
      expect(file.hint).toContain('"hosts"');
      const use = check(report, 'credential:forge:source:widgets');
      expect(use.status).toBe('fail');
      expect(use.detail).toContain('not defined');
      expect(report.ok).toBe(false);
    } finally {
      writeFileSync(setup.secretsFile, healthy);
    }
  });

  it('fails an unreachable PostgreSQL with a clear message, within its timeout; the checks that need no database still run', async () => {
    const port = await freePort();
    const url = `postgres://postgres@127.0.0.1:${port}/test`;
    const report = await runDoctor({ load: () => setup.load({ databaseUrl: url, leaseUrl: `sqlite:${setup.dir}/leases.db` }), timeoutMs: 2_000 });
    const database = check(report, 'database');
    expect(database.status).toBe('fail');
    // The URL as configured, its user name redacted like a password.
    expect(database.detail).toContain(`postgres://***@127.0.0.1:${port}/test is unreachable`);
    expect(database.detail).toMatch(/ECONNREFUSED/);
    expect(database.hint).toContain('FORGESYNC_DATABASE_URL');
    expect(check(report, 'git').status).toBe('ok');
    expect(report.ok).toBe(false);
  });

  it('ends a check whose backend never answers at its timeout, as a failure', async () => {
    // A listener that accepts and says nothing: PostgreSQL's startup never gets its answer.
    const { createServer } = await import('node:net');
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const report = await runDoctor({ load: () => setup.load({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/test`, leaseUrl: `sqlite:${setup.dir}/leases.db` }), timeoutMs: 500 });
      const database = check(report, 'database');
      expect(database.status).toBe('fail');
      expect(database.detail).toMatch(/timeout|took longer than 500 ms/i);
    } finally {
      silent.close();
    }
  });

  it('fails a bad setting by its name and exits 1', async () => {
    const broken = `${setup.dir}/broken.json`;
    writeFileSync(broken, JSON.stringify({ leaseTtl: 'soon', dataDir: `${setup.dir}/data` }));
    const { code, stdout } = await doctorCli(['--config', broken]);
    const report = JSON.parse(stdout) as DoctorReport;
    const setting = check(report, 'config:leaseTtl');
    expect(setting.status).toBe('fail');
    expect(setting.detail).toContain('must be a duration');
    expect(report.ok).toBe(false);
    expect(code).toBe(1);
  });

  it('checks a lease backend of its own: MySQL/MariaDB and PostgreSQL, with their versions', async () => {
    const onMysql = await runDoctor({ load: () => setup.load({ leaseUrl: MYSQL_URL }), timeoutMs: 5_000 });
    expect(check(onMysql, 'leases')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^(MySQL|MariaDB) \d+\.\d+.* at mysql:\/\/\*\*\*@127\.0\.0\.1:3306\/test$/) });
    const onPostgres = await runDoctor({ load: () => setup.load({ leaseUrl: POSTGRES_URL }), timeoutMs: 5_000 });
    expect(check(onPostgres, 'leases')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^PostgreSQL \d+/) });
    // Leases off Redis: only the jobs use it now.
    expect(onPostgres.checks.map((result) => result.name)).toContain('redis:jobs');
  });

  it('fails a feed whose NATS subject no stream captures, and a NATS server the egress policy refuses', async () => {
    const app = await Forgesync.open(setup.load(), { logger: createLogger({ level: 'silent' }) });
    try {
      await app.feeds.add({ name: 'orphan', sink: `${NATS_URL}/forgesync.doctor.nowhere` });
      const report = await runDoctor({ load: () => setup.load(), timeoutMs: 5_000 });
      expect(check(report, 'feed:orphan:stream')).toMatchObject({ status: 'fail', hint: expect.stringContaining("--subjects 'forgesync.doctor.nowhere'") });
      expect(check(report, 'feed:changes:stream').status).toBe('ok');
      const refused = await runDoctor({ load: () => setup.load({ allowNetworks: '10.0.0.0/8' }), timeoutMs: 5_000 });
      expect(check(refused, 'nats:127.0.0.1:4222')).toMatchObject({ status: 'fail', hint: expect.stringContaining('FORGESYNC_ALLOW_NETWORKS') });
      expect(check(refused, 'nats:127.0.0.1:4222').detail).toContain('feeds changes, orphan');
    } finally {
      await app.feeds.remove('orphan');
      await app.close();
    }
  });

  it('warns of clock skew from 1 s and fails it from a third of the lease ttl', () => {
    expect(clockCheck({ skewMs: 300, roundTripMs: 4 }, 15_000).status).toBe('ok');
    expect(clockCheck({ skewMs: -2_000, roundTripMs: 4 }, 15_000)).toMatchObject({ status: 'warn', detail: expect.stringContaining('behind by 2000 ms') });
    expect(clockCheck({ skewMs: 5_000, roundTripMs: 4 }, 15_000)).toMatchObject({ status: 'fail', hint: expect.stringContaining('NTP') });
    expect(clockCheck(undefined, 15_000).status).toBe('ok');
  });

  it('says where traces go (the collector\'s origin only), and why they are off when an endpoint asks for them', () => {
    expect(tracingCheck({})).toMatchObject({ name: 'tracing', status: 'ok', detail: expect.stringMatching(/^off: no OTEL_EXPORTER_OTLP_ENDPOINT/) });
    const key = testSecret('DOCTOR_OTLP_KEY');
    const on = tracingCheck({ OTEL_EXPORTER_OTLP_ENDPOINT: `https://collector.example:4318/otlp?key=${key}` });
    expect(on).toEqual({ name: 'tracing', status: 'ok', detail: 'on: spans exported over OTLP/HTTP (http/protobuf) to https://collector.example:4318' });
    expect(tracingCheck({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector.example:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).detail).toContain('(http/json)');
    const grpc = tracingCheck({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.example:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(grpc).toMatchObject({ status: 'warn', detail: expect.stringContaining('"grpc"'), hint: expect.stringContaining('http/protobuf') });
    expect(tracingCheck({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.example:4318', OTEL_SDK_DISABLED: 'true' }).status).toBe('warn');
  });

  it('keeps the disk thresholds ordered: fail below warn', () => {
    expect(DISK_THRESHOLDS.fail.freeFraction).toBeLessThan(DISK_THRESHOLDS.warn.freeFraction);
    expect(diskStatus({ totalBytes: 100 * 1024 ** 3, freeBytes: 10 * 1024 ** 3, totalInodes: 100, freeInodes: 50 }).status).toBe('warn');
    expect(diskStatus({ totalBytes: 100 * 1024 ** 3, freeBytes: 50 * 1024 ** 3, totalInodes: 100, freeInodes: 50 }).status).toBe('ok');
  });
});
