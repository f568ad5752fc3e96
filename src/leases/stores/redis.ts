import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ReplyError, type Redis } from 'ioredis';
import { LeaseBackendUnavailableError } from '../errors.js';
import type { LeaseHolder, LeaseStore, StoreAcquireRequest, StoreAcquireResult, StoreExtendResult } from '../types.js';
import { redactUrl } from '../../util/redact.js';
import { connectFailFast } from '../../util/redis-client.js';

/** How long createRedisStore waits for TCP, TLS, AUTH, SELECT and the ready check together. */
const CONNECT_TIMEOUT_MS = 2000;
/** A command unanswered for two to three of these periods makes the watchdog drop the connection. */
const STALL_CHECK_MS = 5000;
const SCAN_COUNT = 1000;

interface Script {
  lua: string;
  sha: string;
}

function loadScript(name: string): Script {
  const lua = readFileSync(new URL(`./redis/${name}.lua`, import.meta.url), 'utf8');
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

const ACQUIRE = loadScript('acquire');
const EXTEND = loadScript('extend');
const RELEASE = loadScript('release');
const FORCE_RELEASE = loadScript('force-release');
const INSPECT = loadScript('inspect');
const RAISE_FENCE = loadScript('raise-fence');

/** Replies of the Lua scripts; see the header of each .lua file. */
type AcquireReply = number | string | [number, number, string];
type InspectReply = [number, number, string] | null;
/** A fence as a script returns it: an integer, or a decimal string when it is large. */
type FenceReply = number | string;

const isOne = (reply: unknown): boolean => reply === 1;

// The hash tag {<key>} puts a key's lease and fence in the same cluster slot.
const leaseKey = (key: string): string => `forgesync:lease:{${key}}`;
const fenceKey = (key: string): string => `forgesync:fence:{${key}}`;
/** Escapes Redis glob metacharacters so a user prefix matches literally in SCAN MATCH. */
const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * Decodes a stored value `token\nfence\nacquiredAtMs\npid\nname\nkey\nhost`.
 * Host comes last and keeps any remaining text, since it is the one field nobody validated.
 */
function decodeHolder(value: string, nowMs: number, pttl: number): LeaseHolder {
  const f = value.split('\n');
  return {
    key: f[5]!,
    owner: { name: f[4]!, pid: Number(f[3]), host: f.slice(6).join('\n'), acquiredAt: new Date(Number(f[2])) },
    fence: BigInt(f[1]!),
    // PTTL -1 (no expiry) cannot come from these scripts; report it as lapsing now rather than never.
    expiresAt: new Date(nowMs + Math.max(pttl, 0)),
  };
}

function decodeInspect(reply: unknown): LeaseHolder | null {
  const r = reply as InspectReply;
  return r ? decodeHolder(r[2], r[0], r[1]) : null;
}

/**
 * Opens a lease store on Redis at `url` (`redis://[user:pass@]host:port[/db]` or `rediss://`).
 *
 * acquire, extend, release, inspect, forceRelease and raiseFence are each one Lua script: one
 * round trip, atomic on the server (list is SCAN plus one pipelined inspect per key). Each lease
 * is a string `forgesync:lease:{<key>}` with a PX expiry; its fence comes from a counter
 * `forgesync:fence:{<key>}` that is never deleted, so fences keep growing across holders,
 * releases and expiries (as long as Redis keeps its data; if it loses them, raiseFence lifts a
 * holder back above the fences it had handed out). Expiry is the server's (PX). The times
 * a caller gets back for its own acquire and extend are its wall clock when it sent the request
 * plus the ttl, i.e. never later than the server's; holders reported by inspect and list are
 * timed by the server's TIME.
 *
 * Rejects with LeaseBackendUnavailableError within about two seconds if Redis cannot be
 * reached, instead of retrying forever. Once connected, the client reconnects on its own,
 * commands fail at once while it does, and a command left unanswered on a silent connection
 * fails within 15 seconds; such failures are LeaseBackendUnavailableError too, while errors
 * the server answered with (OOM, READONLY, ...) come through as ioredis ReplyError.
 */
export async function createRedisStore(url: string): Promise<LeaseStore> {
  let client: Redis;
  try {
    client = await connectFailFast(url, { timeoutMs: CONNECT_TIMEOUT_MS });
  } catch (err) {
    throw new LeaseBackendUnavailableError('redis', redactUrl(url), err);
  }
  const watchdog = watchForStalls(client);
  const { run, rethrow } = scriptRunner(client, url);

  function acquireThen<T>({ key, token, ttlMs, owner, withHolder }: StoreAcquireRequest, then: (result: StoreAcquireResult) => T): Promise<T> {
    const sentAt = Date.now();
    const rest = `\n${sentAt}\n${owner.pid}\n${owner.name}\n${key}\n${owner.host}`;
    return run(ACQUIRE, 2, [leaseKey(key), fenceKey(key), token, ttlMs, rest, withHolder ? '1' : '0'], (reply) => {
      const r = reply as AcquireReply;
      if (r === 0) return then({ acquired: false, holder: null });
      if (typeof r === 'object') return then({ acquired: false, holder: decodeHolder(r[2], r[0], r[1]) });
      return then({ acquired: true, fence: BigInt(r), acquiredAt: new Date(sentAt), expiresAt: new Date(sentAt + ttlMs) });
    });
  }

  return {
    kind: 'redis',

    acquire(request: StoreAcquireRequest): Promise<StoreAcquireResult> {
      return acquireThen(request, (result) => result);
    },

    acquireThen,

    extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult> {
      // Absent and taken over look the same here; the manager detects expiry with its own deadline.
      const sentAt = Date.now();
      return run(EXTEND, 1, [leaseKey(key), token, ttlMs], (reply): StoreExtendResult =>
        isOne(reply) ? { extended: true, expiresAt: new Date(sentAt + ttlMs) } : { extended: false, reason: 'lost' },
      );
    },

    release(key: string, token: string): Promise<boolean> {
      return run(RELEASE, 1, [leaseKey(key), token], isOne);
    },

    raiseFence(key: string, token: string, floor: bigint): Promise<bigint | null> {
      return run(RAISE_FENCE, 2, [leaseKey(key), fenceKey(key), token, floor.toString()], (reply) =>
        reply === 0 ? null : BigInt(reply as FenceReply),
      );
    },

    inspect(key: string): Promise<LeaseHolder | null> {
      return run(INSPECT, 1, [leaseKey(key)], decodeInspect);
    },

    list(prefix: string): Promise<LeaseHolder[]> {
      return listHolders({ client, run, rethrow }, prefix);
    },

    forceRelease(key: string, fence?: bigint): Promise<boolean> {
      return run(FORCE_RELEASE, 1, [leaseKey(key), fence === undefined ? '' : fence.toString()], isOne);
    },

    async ping(): Promise<void> {
      await client.ping().catch(rethrow);
    },

    async close(): Promise<void> {
      watchdog.stop();
      try {
        await client.quit();
      } catch {
        client.disconnect();
      }
    },
  };
}

/**
 * Watches `client` for a dead connection, and reconnects after it is closed until {@link stop}.
 *
 * A command sent on a connection whose peer went silent (hung server, partition without a
 * reset) would wait for TCP to give up, which takes many minutes; ioredis resends it only once
 * a new connection is ready; and a reconnect whose handshake goes unanswered stays in
 * 'connect' forever (connectTimeout covers only TCP). ioredis's commandTimeout would fail
 * such commands, at the price of a timer per command on the hot path, but would leave the
 * stuck handshake alone. So one coarse timer watches instead: the same command at the head
 * of ioredis's queue of commands awaiting a reply over three checks, or a handshake
 * unfinished as long, means the connection is dead. Closing it fails every pending
 * command; the 'end' handler then opens a new one.
 */
function watchForStalls(client: Redis): { stop(): void } {
  let closing = false;
  let oldest: unknown;
  let stalledChecks = 0;
  client.on('end', () => {
    if (!closing) client.connect().catch(() => {}); // failures go to 'error' and retryStrategy
  });
  const watchdog = setInterval(() => {
    const head = client.status === 'ready' ? client.commandQueue.peekFront() : undefined;
    const stalled = client.status === 'connect' || (head !== undefined && head === oldest);
    oldest = head;
    stalledChecks = stalled ? stalledChecks + 1 : 0;
    if (stalledChecks >= 2) {
      stalledChecks = 0;
      client.disconnect(); // a manual close: ioredis rejects all pending commands, then emits 'end'
    }
  }, STALL_CHECK_MS).unref();
  return {
    stop: () => {
      closing = true;
      clearInterval(watchdog);
    },
  };
}

/** Runs one of the scripts and decodes its reply (see {@link scriptRunner}). */
type RunScript = <T>(script: Script, keys: number, args: (string | number)[], decode: (reply: unknown) => T) => Promise<T>;

/** The script runner of a store on `client`, and how it reports a failed command. */
function scriptRunner(client: Redis, url: string): { run: RunScript; rethrow: (err: unknown) => never } {
  /**
   * Errors the server answered with (a script bug, OOM, READONLY) pass through as they are;
   * anything else means the connection failed, and is reported as the backend being unavailable.
   */
  const failure = (err: unknown): unknown =>
    err instanceof ReplyError ? err : new LeaseBackendUnavailableError('redis', redactUrl(url), err);
  const rethrow = (err: unknown): never => {
    throw failure(err);
  };

  /**
   * Runs a script with EVALSHA, sending its source with EVAL when the server lacks it (first
   * use, restart, failover), and decodes the reply. Hand-rolled rather than ioredis
   * defineCommand (same EVALSHA-then-EVAL behaviour) so that the hot path has one promise
   * layer: defineCommand adds its own `.catch` layer and per-call wrappers, ~0.3 µs a call.
   */
  function run<T>(script: Script, keys: number, args: (string | number)[], decode: (reply: unknown) => T): Promise<T> {
    return client.evalsha(script.sha, keys, ...args).then(decode, (err: unknown) => {
      if (!(err instanceof ReplyError && (err as Error).message.startsWith('NOSCRIPT'))) throw failure(err);
      return client.eval(script.lua, keys, ...args).then(decode, rethrow);
    });
  }
  return { run, rethrow };
}

/** The holders of the leases whose keys start with `prefix`, by key: SCAN, then one pipelined inspect per key. */
async function listHolders(store: { client: Redis; run: RunScript; rethrow: (err: unknown) => never }, prefix: string): Promise<LeaseHolder[]> {
  const { client, run, rethrow } = store;
  const match = `forgesync:lease:{${escapeGlob(prefix)}*`;
  const names = new Set<string>(); // SCAN may return a name more than once
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', match, 'COUNT', SCAN_COUNT).catch(rethrow);
    for (const name of batch) names.add(name);
    cursor = next;
  } while (cursor !== '0');

  // One inspect per key, concurrently: ioredis pipelines them on the one connection.
  const found = await Promise.all([...names].map((name) => run(INSPECT, 1, [name], decodeInspect)));
  const holders: LeaseHolder[] = [];
  for (const holder of found) {
    // null: expired or released since SCAN saw it. The prefix check matters because the
    // pattern also matches the closing brace: prefix "a}" would match the key "a".
    if (holder?.key.startsWith(prefix)) holders.push(holder);
  }
  return holders.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
