import { withTraceContext, type TraceCarrier } from '../../tracing/index.js';
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
/** One delivery's match keys, and its trace context (the job it queues continues its trace). */
export interface MatchRequest {
  keys: readonly string[];
  trace: TraceCarrier | undefined;
}

export function matchRequestBatcher(registry: RegistryRepository, nudger: Nudger): Batcher<MatchRequest, MatchedRequest[]> {
  return new Batcher<MatchRequest, MatchedRequest[]>(
    async (requests) => {
      const matched = await registry.requestByMatchKeySets(requests.map((request) => request.keys));
      // Each source once, under the trace of the first delivery of the batch that named it.
      const sources = new Map<number, { source: MatchedRequest; trace: TraceCarrier | undefined }>();
      matched.forEach((found, index) => {
        for (const source of found) if (!source.alreadyWaiting && !sources.has(source.sourceId)) sources.set(source.sourceId, { source, trace: requests[index]!.trace });
      });
      await Promise.all(
        [...sources.values()].map(({ source, trace }) =>
          withTraceContext(trace, () => nudger.nudge({ id: source.sourceId, name: source.name, url: source.url, shard: source.shard, moveTo: source.moveTo }, 'webhook')),
        ),
      );
      return matched;
    },
    { maxBatch: MATCH_BATCH, concurrency: 1 },
  );
}
