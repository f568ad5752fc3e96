import type { Compilable } from 'kysely';
import type { ProjectTargetDetail } from '../../replication/api.js';
import { GithubAnswerError, GithubAuthError, GithubRequestError } from '../errors.js';
import type { ImporterMetrics } from '../metrics.js';
import { recordFailureStep } from '../store/failures.js';
import { finishRefreshStep, type WaitingRefresh } from '../store/refreshes.js';
import { refreshTarget, type RefreshEnv } from './apply.js';

/*
 * Refreshes go in rounds: the targets due are fetched side by side, and
 * what they answered is written in one batch (one transaction, one guard,
 * one progress row for the round, however many targets: under a storm of
 * deliveries the writes do not grow with them). A round never holds two
 * targets of one issue or pull request: a comment's refresh counts on its
 * issue from the stored row, which an issue refresh in the same round
 * would be writing too; the second waits for the next round, which reads
 * what the first wrote.
 */

/**
 * A target is refreshed once no delivery named it for SETTLE_MS (GitHub
 * sends the deliveries of one action together: an issue opened with a
 * label and an assignee is three; a burst costs one fetch), or SETTLE_MAX_MS
 * after its first delivery, whichever comes first.
 */
const SETTLE_MS = 150;
const SETTLE_MAX_MS = 1000;

/** When `refresh` is due (ms). */
export const dueAt = (refresh: WaitingRefresh) => Math.min(refresh.lastAt + SETTLE_MS, refresh.requestedAt + SETTLE_MAX_MS);

/** The issue or pull request number a target writes (its own, or the one a comment counts on); else the target itself. */
function ownerOf(refresh: WaitingRefresh): string {
  const [kind, arg] = refresh.target.split(':');
  if (kind === 'issue' || kind === 'pull') return `#${arg}`;
  const detail = JSON.parse(refresh.detail) as ProjectTargetDetail;
  const number = kind === 'comment' ? detail.issue : kind === 'review-comment' ? detail.pull : undefined;
  return number === undefined ? refresh.target : `#${number}`;
}

/** The targets of `waiting` due at `now`, at most `limit`, one per issue or pull request (see above). */
export function nextRound(waiting: readonly WaitingRefresh[], now: number, limit: number): WaitingRefresh[] {
  const owners = new Set<string>();
  const round: WaitingRefresh[] = [];
  for (const refresh of waiting) {
    if (round.length >= limit) break;
    if (dueAt(refresh) > now) continue;
    const owner = ownerOf(refresh);
    if (owners.has(owner)) continue;
    owners.add(owner);
    round.push(refresh);
  }
  return round;
}

/** What became of one target of a round. */
type Refreshed = { refresh: WaitingRefresh; result: 'stored' | 'deleted' | 'sync' | 'failed'; steps: (Compilable | null)[] };

/**
 * Fetches the round's targets side by side and writes what they answered,
 * with the removal of their waiting rows, in one batch. A target the API
 * would not answer (an error after the client's retries) is listed as a
 * failure and dropped: the next sync brings it. Returns whether a target
 * asked for a sync.
 * @throws RunStoppedError, LeaseLostError: nothing of the round is written, its targets wait.
 */
export async function refreshRound(env: RefreshEnv, round: readonly WaitingRefresh[], metrics: Pick<ImporterMetrics, 'refreshes' | 'refreshLag'>): Promise<boolean> {
  const { ctx } = env;
  const refreshed = await Promise.all(
    round.map(async (refresh): Promise<Refreshed> => {
      try {
        const outcome = await refreshTarget(env, refresh.target, JSON.parse(refresh.detail) as ProjectTargetDetail);
        return 'sync' in outcome ? { refresh, result: 'sync', steps: [] } : { refresh, result: outcome.result, steps: outcome.steps };
      } catch (error) {
        if (!(error instanceof GithubRequestError || error instanceof GithubAuthError || error instanceof GithubAnswerError)) throw error;
        ctx.logger.warn({ event: 'import_refresh_failed', import: ctx.importName, target: refresh.target, err: error.message }, `import ${ctx.importName}: refreshing ${refresh.target} failed: ${error.message}`);
        return { refresh, result: 'failed', steps: [recordFailureStep(ctx.db, ctx.importId, ctx.run, { type: 'refresh', id: refresh.target, error: error.message }, Date.now())] };
      }
    }),
  );
  await ctx.commit(refreshed.flatMap(({ refresh, steps }) => [...steps, finishRefreshStep(ctx.db, ctx.importId, refresh)]));
  const now = Date.now();
  for (const { refresh, result } of refreshed) {
    metrics.refreshes.inc({ result });
    if (result !== 'failed') metrics.refreshLag.observe((now - refresh.requestedAt) / 1000);
  }
  return refreshed.some(({ result }) => result === 'sync');
}
