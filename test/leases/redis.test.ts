import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { redisBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

const raw = new Redis(redisBackend.url, { lazyConnect: true });
afterAll(() => raw.quit());

/** Deletes every key matching `pattern`; not FLUSHDB, as other test files share the database. */
async function deleteMatching(pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, names] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (names.length > 0) await raw.del(...names);
    cursor = next;
  } while (cursor !== '0');
}

const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

describeLeaseConformance(redisBackend, {
  removeUnderneath: async (key) => void (await raw.del(`forgesync:lease:{${key}}`)),
  // What a restart without persistence does to these keys: leases and fence counters gone.
  resetStore: async (prefix) => {
    await deleteMatching(`forgesync:lease:{${escapeGlob(prefix)}*`);
    await deleteMatching(`forgesync:fence:{${escapeGlob(prefix)}*`);
  },
});
