import type { Redis } from 'ioredis';
import { MINIMUM_REDIS_MAJOR, parseJobsUrl, readRedisServer, redisMajor } from '../jobs/bullmq/connection.js';
import { urlScheme } from '../leases/open.js';
import { redactUrl } from '../util/redact.js';
import { connectFailFast } from '../util/redis-client.js';
import { fail, messageOf, ok, type CheckContext, type CheckGroup, type CheckResult } from './types.js';

/** One Redis server and what forgesync keeps in it. */
interface RedisUse {
  connectUrl: string;
  shown: string;
  uses: ('jobs' | 'leases')[];
}

/** The Redis servers the configuration names (jobs, leases), each once. */
function redisUses(config: { jobsUrl: string | undefined; leaseUrl: string }): RedisUse[] {
  const byUrl = new Map<string, RedisUse>();
  const add = (connectUrl: string, use: 'jobs' | 'leases') => {
    const known = byUrl.get(connectUrl) ?? { connectUrl, shown: redactUrl(connectUrl), uses: [] };
    known.uses.push(use);
    byUrl.set(connectUrl, known);
  };
  if (config.jobsUrl !== undefined) add(parseJobsUrl(config.jobsUrl).connectUrl, 'jobs');
  if (['redis', 'rediss'].includes(urlScheme(config.leaseUrl) ?? '')) add(config.leaseUrl, 'leases');
  return [...byUrl.values()];
}

/**
 * Each configured Redis: reachable, its version, and its maxmemory-policy.
 * Any policy but noeviction lets Redis drop keys under memory pressure:
 * BullMQ's job hashes and locks (BullMQ itself warns "Eviction policy is …
 * It should be noeviction", and forgesync refuses to start its queue on such
 * a Redis) and the leases (an evicted lease key is a lease anyone may take
 * while its holder still works).
 */
export const redisChecks: CheckGroup = {
  name: 'redis',
  async run({ config, timeoutMs }: CheckContext): Promise<CheckResult[]> {
    const results = await Promise.all(redisUses(config).map((use) => checkRedis(use, timeoutMs)));
    return results.flat();
  },
};

async function checkRedis(use: RedisUse, timeoutMs: number): Promise<CheckResult[]> {
  const name = `redis:${use.uses.join('+')}`;
  const setting = use.uses.map((what) => (what === 'jobs' ? 'FORGESYNC_JOBS_URL' : 'FORGESYNC_LEASE_URL')).join(' and ');
  let client: Redis;
  try {
    client = await connectFailFast(use.connectUrl, { timeoutMs });
  } catch (error) {
    return [fail(name, `${use.shown} is unreachable: ${messageOf(error)}`, `check ${setting} (host, port, password, TLS with rediss://) and that redis-server is running`)];
  }
  try {
    const server = await readRedisServer(client);
    const version = server.version ?? 'unknown';
    const policy = server.policy ?? 'unknown';
    const reachable = redisMajor(server.version) >= MINIMUM_REDIS_MAJOR
      ? ok(name, `Redis ${version} at ${use.shown} (${use.uses.join(', ')})`)
      : fail(name, `Redis ${version} at ${use.shown}; BullMQ and forgesync need Redis ${MINIMUM_REDIS_MAJOR} or later`, 'upgrade Redis (6.2 or later recommended)');
    return [reachable, policyCheck(`${name}:maxmemory-policy`, policy, use)];
  } catch (error) {
    return [fail(name, `${use.shown} did not answer INFO: ${messageOf(error)}`, 'the user in the URL needs the INFO command; check the Redis ACL')];
  } finally {
    client.disconnect();
  }
}

function policyCheck(name: string, policy: string, use: RedisUse): CheckResult {
  if (policy === 'noeviction') return ok(name, 'noeviction: no key is ever evicted');
  const lost = use.uses.map((what) => (what === 'jobs' ? 'queued jobs and their locks (BullMQ requires noeviction)' : 'held leases (another process could take a lease still in use)')).join(' and ');
  return fail(
    name,
    `maxmemory-policy is ${policy}: under memory pressure Redis may evict ${lost}`,
    'run `CONFIG SET maxmemory-policy noeviction` and set `maxmemory-policy noeviction` in redis.conf so it survives a restart, or give forgesync a Redis of its own',
  );
}
