import { Batcher } from '../../util/batcher.js';
import type { Nudger } from '../nudger.js';
import type { RegistryRepository } from '../store/registry.js';
import type { MatchedRequest } from '../store/match-requests.js';

/** Deliveries whose requests go in one statement at most (their keys, ~6 each, are its parameters). */
const MATCH_BATCH = 200;

/**
 * Concurrent deliveries' requests go together (a group commit: one UPDATE
 * and commit for a batch of them, see util/batcher.ts), and each source
 * they name is nudged once, unless an earlier request of it still waits
 * (a storm of pushes to one repository queues one job, not one a push).
 */
export function matchRequestBatcher(registry: RegistryRepository, nudger: Nudger): Batcher<readonly string[], MatchedRequest[]> {
  return new Batcher<readonly string[], MatchedRequest[]>(
    async (keySets) => {
      const matched = await registry.requestByMatchKeySets(keySets);
      const sources = new Map(matched.flat().filter((source) => !source.alreadyWaiting).map((source) => [source.sourceId, source]));
      await Promise.all([...sources.values()].map((source) => nudger.nudge({ id: source.sourceId, name: source.name, url: source.url, shard: source.shard, moveTo: source.moveTo }, 'webhook')));
      return matched;
    },
    { maxBatch: MATCH_BATCH, concurrency: 1 },
  );
}
