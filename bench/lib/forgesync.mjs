// The subject: forgesync's public API, from the built library in dist/.
import { openLeaseManager } from '../../dist/index.js';

/**
 * tryAcquire + lease.release() through a LeaseManager opened on `url`, with
 * one request object reused for every call (ttl, owner name) as an
 * application would.
 */
export async function forgesyncContender(url, { ttlMs }) {
  const manager = await openLeaseManager(url);
  const request = { ttlMs, owner: 'bench' };
  const session = {
    tryAcquire: (key) => manager.tryAcquire(key, request),
    release: (lease) => lease.release(),
  };
  return {
    name: 'forgesync',
    role: 'subject',
    describe: `LeaseManager.tryAcquire + Lease.release (${manager.backend} store: fenced, owner metadata)`,
    sessions: (n) => Array.from({ length: n }, () => session),
    close: () => manager.close(),
  };
}
