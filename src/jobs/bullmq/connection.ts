import { Redis, type RedisOptions } from 'ioredis';
import { redactUrl } from '../../util/redact.js';
import { connectFailFast } from '../../util/redis-client.js';
import { JobBackendUnavailableError, UnsupportedJobsUrlError } from '../errors.js';

/** How long opening waits for TCP, TLS, AUTH, SELECT and the ready check together. */
export const CONNECT_TIMEOUT_MS = 2000;
export const DEFAULT_PREFIX = 'forgesync-jobs';
// BullMQ joins the prefix, the queue and the rest with ":"; "{...}" lets a user pin one cluster slot.
const PREFIX = /^[A-Za-z0-9_.{}-]{1,100}$/;

export interface JobsRedisTarget {
  /** The URL for ioredis: the one given, without the query. */
  connectUrl: string;
  /** The URL to show in messages and logs: no password. */
  shown: string;
  /** BullMQ's key prefix. */
  prefix: string;
}

/** Splits `redis://[user:pass@]host:port[/db][?prefix=NAME]` (or `rediss://`) into what ioredis and BullMQ take. */
export function parseJobsUrl(url: string): JobsRedisTarget {
  const shown = redactUrl(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsupportedJobsUrlError(`jobs URL ${shown} is not a valid URL; expected redis://[user:pass@]host:port[/db][?prefix=NAME]`);
  }
  let prefix = DEFAULT_PREFIX;
  for (const [name, value] of parsed.searchParams) {
    if (name !== 'prefix') {
      throw new UnsupportedJobsUrlError(`jobs URL ${shown} has an unknown parameter "${name}"; the only one is prefix=NAME`);
    }
    if (!PREFIX.test(value)) {
      throw new UnsupportedJobsUrlError(`jobs URL ${shown}: prefix must be 1-100 of A-Z, a-z, 0-9, "_", ".", "-", "{" and "}"`);
    }
    prefix = value;
  }
  parsed.search = '';
  return { connectUrl: parsed.toString(), shown: redactUrl(parsed.toString()), prefix };
}

/**
 * Connects the client every producer-side call goes through (the queues, the fairness scripts,
 * the counts). Like the Redis lease store: rejects with JobBackendUnavailableError within
 * CONNECT_TIMEOUT_MS instead of retrying forever; once connected it reconnects on its own, and
 * commands fail at once while it does (an enqueue then rejects rather than hangs).
 */
export async function connectCommandClient(target: JobsRedisTarget, closing: () => boolean): Promise<Redis> {
  try {
    return await connectFailFast(target.connectUrl, { timeoutMs: CONNECT_TIMEOUT_MS, stopped: closing });
  } catch (cause) {
    throw new JobBackendUnavailableError(`job queue Redis at ${target.shown} is unreachable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/**
 * The connection a Worker is given: BullMQ uses it for fetching and finishing jobs and
 * duplicates it for its blocking wait. Commands wait across reconnects (BullMQ requires
 * maxRetriesPerRequest: null there), so a Redis restart only pauses the worker. BullMQ's
 * duplicate for the blocking wait inherits these options.
 */
export function workerClient(target: JobsRedisTarget, onError: (err: unknown) => void, closing: () => boolean): Redis {
  const options: RedisOptions = {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: null,
    // ioredis' own back-off, until the transport closes: Worker.close() waits for its connections
    // to end, and one that kept retrying a Redis that is down would never end.
    retryStrategy: (times) => (closing() ? null : Math.min(times * 50, 2000)),
  };
  const client = new Redis(target.connectUrl, options);
  client.on('error', onError);
  return client;
}

/** BullMQ's own minimum major version of Redis (RedisConnection.minimumVersion). */
export const MINIMUM_REDIS_MAJOR = 5;

/** What one INFO tells about a Redis server: its version and maxmemory-policy (undefined when INFO omits them). */
export interface RedisServerFacts {
  version: string | undefined;
  policy: string | undefined;
}

/** Reads the server's version and maxmemory-policy with one INFO (its default sections include server and memory). */
export async function readRedisServer(client: Redis): Promise<RedisServerFacts> {
  const info = await client.info();
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
  return { version: field('redis_version'), policy: field('maxmemory_policy') };
}

/** The major version in a Redis version string (NaN when unknown). */
export function redisMajor(version: string | undefined): number {
  return version === undefined ? NaN : Number(version.split('.')[0]);
}

/**
 * Refuses a Redis that could silently drop BullMQ's keys: with any maxmemory-policy but
 * noeviction, Redis under memory pressure evicts job hashes, locks and deduplication keys
 * (BullMQ itself only prints a warning). Also refuses Redis older than BullMQ's minimum (5).
 */
export async function checkServer(client: Redis, shown: string): Promise<void> {
  let server: RedisServerFacts;
  try {
    server = await readRedisServer(client);
  } catch (cause) {
    throw new JobBackendUnavailableError(`job queue Redis at ${shown} did not answer INFO: ${(cause as Error).message}`, { cause });
  }
  const { policy, version } = server;
  if (policy !== undefined && policy !== 'noeviction') {
    throw new JobBackendUnavailableError(
      `job queue Redis at ${shown} has maxmemory-policy ${policy}, which lets Redis evict queued jobs and their locks under memory pressure; ` +
        'forgesync needs noeviction there: run `CONFIG SET maxmemory-policy noeviction` (and set it in redis.conf so it survives a restart), ' +
        'or use a Redis of its own for jobs',
    );
  }
  if (redisMajor(version) < MINIMUM_REDIS_MAJOR) {
    throw new JobBackendUnavailableError(`job queue Redis at ${shown} is version ${version}; BullMQ needs Redis ${MINIMUM_REDIS_MAJOR} or later (6.2 or later recommended)`);
  }
}

/** Closes a client without waiting on a connection that is down. */
export async function shut(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}

/** Ends an ioredis client now, including one stuck "reconnecting" (a connect attempt ends it: it is closing). */
export function endClient(client: Redis): void {
  if (client.status === 'end') return;
  if (client.status === 'reconnecting') client.connect().then(() => client.disconnect(), () => {});
  else client.disconnect();
}
