import { Redis } from 'ioredis';

/**
 * An ioredis client that fails fast, for the lease store and the job queue's
 * producer side: connected within `timeoutMs` — TCP, TLS, AUTH, SELECT and the
 * ready check together (ioredis' connectTimeout covers only TCP) — or rejected
 * with the reason its 'error' event gave (connect() itself only says
 * "Connection is closed"). Once connected it reconnects on its own with a
 * capped back-off until `stopped()` says so, and commands fail at once while
 * it is disconnected instead of piling up until it is back.
 */
export async function connectFailFast(url: string, options: { timeoutMs: number; stopped?: () => boolean }): Promise<Redis> {
  let connected = false;
  let firstError: unknown;
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: options.timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // Give up on the first failed connect; after that, reconnect with a capped back-off.
    retryStrategy: (times) => (connected && !options.stopped?.() ? Math.min(times * 100, 2000) : null),
  });
  // Without a listener, ioredis would crash the process with an unhandled 'error' event.
  client.on('error', (err: unknown) => {
    if (!connected) firstError ??= err; // the first error is the cause; later ones echo it
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    const connecting = client.connect();
    connecting.catch(() => {}); // if the timer wins, the later rejection is expected, not unhandled
    await Promise.race([
      connecting,
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
      }),
    ]);
    connected = true;
    return client;
  } catch (err) {
    client.disconnect();
    throw firstError ?? err;
  } finally {
    clearTimeout(timer);
  }
}
