// Redis: forgesync vs ioredis issuing SET NX PX + EVALSHA compare-and-delete,
// and the npm peers redis-semaphore (Mutex) and redlock. Every contender has
// its own single ioredis connection (forgesync opens its own from the URL);
// concurrent workers share it, so ioredis pipelines their commands alike.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import Redlock, { ExecutionError } from 'redlock';
import { Mutex } from 'redis-semaphore';
import { forgesyncContender } from './forgesync.mjs';
import { unreachable } from './util.mjs';

const CONNECT_TIMEOUT_MS = 2000;

/** A connected ioredis client with default options, or an "unreachable" error within ~2 s. */
export async function connectRedis(url) {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null, // a benchmark does not reconnect; a drop fails the backend's run
  });
  let firstError;
  client.on('error', (error) => {
    firstError ??= error;
  });
  let timer;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    client.disconnect();
    throw unreachable(firstError ?? error);
  } finally {
    clearTimeout(timer);
  }
  return client;
}

const DEL_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/** Raw: SET key token NX PX ttl, then EVALSHA of a GET-compare-DEL script (loaded up front). */
async function rawContender(url, { ttlMs }) {
  const client = await connectRedis(url);
  const sha = await client.script('LOAD', DEL_IF_EQUAL);
  const release = async (key, token) => {
    try {
      return await client.evalsha(sha, 1, key, token);
    } catch (error) {
      if (!String(error?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(DEL_IF_EQUAL, 1, key, token);
    }
  };
  const session = {
    async tryAcquire(key) {
      const token = randomUUID();
      return (await client.set(key, token, 'PX', ttlMs, 'NX')) === 'OK' ? { key, token } : null;
    },
    async release(handle) {
      if ((await release(handle.key, handle.token)) !== 1) throw new Error(`raw redis: ${handle.key} was not ours any more`);
    },
  };
  return {
    name: 'raw',
    role: 'baseline',
    describe: 'ioredis: SET k token NX PX ttl + EVALSHA GET/compare/DEL',
    sessions: (n) => Array.from({ length: n }, () => session),
    close: () => client.quit().catch(() => client.disconnect()),
  };
}

/**
 * redis-semaphore Mutex, one per attempt (its identifier is the token), with
 * acquireAttemptsLimit 1 so tryAcquire makes one SET NX PX. After a failed
 * attempt the library still sleeps retryInterval before giving up (0 here,
 * which Node turns into a ~1 ms timer): that is its losers' back-off, so the
 * harness adds none of its own for it (pausesOnFailureMs).
 * refreshInterval is left at its default (a setInterval armed per lease).
 */
async function redisSemaphoreContender(url, { ttlMs }) {
  const client = await connectRedis(url);
  const options = { lockTimeout: ttlMs, acquireTimeout: ttlMs, acquireAttemptsLimit: 1, retryInterval: 0 };
  const session = {
    async tryAcquire(key) {
      const mutex = new Mutex(client, key, options);
      return (await mutex.tryAcquire()) ? mutex : null;
    },
    release: (mutex) => mutex.release(),
  };
  return {
    name: 'redis-semaphore',
    role: 'peer',
    pausesOnFailureMs: 1,
    describe: 'redis-semaphore 5 Mutex.tryAcquire (acquireAttemptsLimit 1) + release',
    sessions: (n) => Array.from({ length: n }, () => session),
    close: () => client.quit().catch(() => client.disconnect()),
  };
}

/**
 * redlock 5 with a single client and retryCount 0: acquire is one EVALSHA,
 * release another. When the resource is taken, redlock throws ExecutionError
 * (after sending a release script to undo partial locks), which counts as a
 * failed try here.
 */
async function redlockContender(url, { ttlMs }) {
  const client = await connectRedis(url);
  const redlock = new Redlock([client], { retryCount: 0, retryDelay: 0, retryJitter: 0 });
  const session = {
    async tryAcquire(key) {
      try {
        return await redlock.acquire([key], ttlMs);
      } catch (error) {
        if (error instanceof ExecutionError) return null;
        throw error;
      }
    },
    release: (lock) => redlock.release(lock),
  };
  return {
    name: 'redlock',
    role: 'peer',
    describe: 'redlock 5.0.0-beta.2 acquire([key], ttl) with retryCount 0 + release',
    sessions: (n) => Array.from({ length: n }, () => session),
    close: () => client.quit().catch(() => client.disconnect()),
  };
}

export async function openRedis(ctx, url) {
  const admin = await connectRedis(url); // also the reachability probe
  // forgesync's fence counters never expire, so a killed run leaves them behind; every other
  // bench key has a PX expiry and goes away by itself.
  let swept = 0;
  let cursor = '0';
  do {
    const [next, names] = await admin.scan(cursor, 'MATCH', `*${ctx.keyNamespace}*`, 'COUNT', 1000);
    for (const name of names) {
      if (name.includes(ctx.keyPrefix)) continue;
      if ((await admin.pttl(name)) === -1) swept += await admin.del(name);
    }
    cursor = next;
  } while (cursor !== '0');
  const contenders = [];
  const cleanup = async () => {
    for (const c of contenders) await c.close().catch(() => {});
    // forgesync:lease:{…} and forgesync:fence:{…}, mutex:…, and the raw/redlock keys.
    const removed = await deleteMatching(admin, `*${ctx.keyPrefix}*`);
    await admin.quit().catch(() => admin.disconnect());
    return `removed ${removed} bench keys`;
  };
  const factories = {
    forgesync: (c) => forgesyncContender(url, c),
    raw: (c) => rawContender(url, c),
    'redis-semaphore': (c) => redisSemaphoreContender(url, c),
    redlock: (c) => redlockContender(url, c),
  };
  try {
    for (const make of Object.values(factories)) contenders.push(await make(ctx));
  } catch (error) {
    await cleanup().catch(() => {});
    throw error;
  }
  const notes = [
    ...(swept ? [`swept ${swept} fence keys left by an earlier interrupted run`] : []),
    'redis-semaphore sleeps retryInterval (0 → ~1 ms timer) inside each failed try; that counts as its back-off',
    'redlock sends an extra release EVALSHA and throws ExecutionError on each failed try',
  ];
  return { url, contenders, factories, cleanup, notes };
}

/** Deletes the keys matching `pattern` (SCAN, never KEYS: the server may be shared); returns how many. */
export async function deleteMatching(redis, pattern) {
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length) removed += await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  return removed;
}
