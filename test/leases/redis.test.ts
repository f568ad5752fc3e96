import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { redisBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

const raw = new Redis(redisBackend.url, { lazyConnect: true });
afterAll(() => raw.quit());

describeLeaseConformance(redisBackend, {
  removeUnderneath: async (key) => void (await raw.del(`forgesync:lease:{${key}}`)),
});
