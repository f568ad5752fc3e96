import type { Redis } from 'ioredis';

/**
 * Fairness across buckets (upstream hosts) on BullMQ, which has no groups in its open-source
 * edition: every job gets a BullMQ priority (lower runs first; equal priorities run in the order
 * they were added), chosen as a round number, as in start-time fair queuing:
 *
 *   - `served` is the highest priority of any job of the kind that has started so far;
 *   - a bucket's next job gets `max(served, last priority given to that bucket) + 1`.
 *
 * So a bucket's jobs take consecutive rounds (first in, first out within a bucket), a bucket
 * with nothing queued joins at the next round, and the k-th waiting job of every bucket gets the
 * same round: a host with a thousand queued jobs gets one of them served per round, like any
 * other host. (Jobs without a bucket share one, "".) (Plain "priority = the bucket's number of waiting jobs" would interleave buckets too,
 * but lets a bucket's new jobs overtake its old ones whenever its backlog shrank, so under a
 * steady load old jobs could wait forever.)
 *
 * Per kind, two hashes next to the queue's own keys:
 *   - `<prefix>:<kind>:fairness`: `v` = served, `b:<bucket>` = the bucket's last round;
 *   - `<prefix>:<kind>:fairness-waiting`: key → the round given to that key's waiting job
 *     (or to its follow-up, while a job of the key runs).
 * A nudge of a key already in the waiting hash gets the same round back and advances nothing:
 * BullMQ drops it (a job of that key is waiting) or keeps it as the follow-up (one is running),
 * and either way the key still holds one place. This keeps the rounds right without having to
 * find out what BullMQ did with an add. When a job starts, the worker removes its key from the
 * waiting hash, raises `served`, drops its bucket's entry once served has caught up with it,
 * and, when nothing is waiting any more, deletes the state, so rounds restart at 1 and stay far
 * below BullMQ's limit (2^21 - 1) unless a backlog never drains; they are clamped to it then
 * (ties run in the order added, so the worst case is plain first-in, first-out).
 *
 * Both updates are batched, one script call per kind: the rank requests made in one turn of the
 * event loop, and the start reports of a few milliseconds, which at thousands of jobs a second
 * saves most of a command's cost per job (a start reported late only orders a nudge that lands
 * in between as if the job were still waiting).
 *
 * Fairness only orders work: every job is added whatever these scripts answer. State lost to a
 * FLUSHDB is state started afresh; a waiting entry left by a job that vanished (an add that
 * failed, data wiped under it) gives that key's next job an early round, and its start cleans
 * the entry up. The worker's update is not atomic with BullMQ's move to active: a nudge landing
 * in between becomes a follow-up holding the old round, so it runs a little early. Jobs a worker
 * died with go back to BullMQ's plain wait list, which is served before all prioritized jobs.
 */
export const MAX_PRIORITY = 2 ** 21 - 1;
/** Requests per script call at most (each adds two or three arguments). */
const BATCH = 500;
/** How long start reports wait to be sent together. */
const START_FLUSH_MS = 5;

// KEYS: state, waiting. ARGV: max priority, then key, bucket per job. Returns the priority of each.
const RANK = `
local max = tonumber(ARGV[1])
local served = tonumber(redis.call('HGET', KEYS[1], 'v') or 0)
local out = {}
for i = 2, #ARGV, 2 do
  local round = redis.call('HGET', KEYS[2], ARGV[i])
  if round then
    round = tonumber(round)
  else
    local field = 'b:' .. ARGV[i + 1]
    round = math.min(math.max(served, tonumber(redis.call('HGET', KEYS[1], field) or 0)) + 1, max)
    redis.call('HSET', KEYS[1], field, round)
    redis.call('HSET', KEYS[2], ARGV[i], round)
  end
  out[#out + 1] = round
end
return out
`;

// KEYS: state, waiting. ARGV: key, bucket, priority per started job.
const STARTED = `
local served = tonumber(redis.call('HGET', KEYS[1], 'v') or 0)
local top = served
for i = 1, #ARGV, 3 do
  redis.call('HDEL', KEYS[2], ARGV[i])
  top = math.max(top, tonumber(ARGV[i + 2]))
end
if redis.call('HLEN', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
if top > served then redis.call('HSET', KEYS[1], 'v', top) end
for i = 1, #ARGV, 3 do
  local field = 'b:' .. ARGV[i + 1]
  local last = redis.call('HGET', KEYS[1], field)
  if last and tonumber(last) <= top then redis.call('HDEL', KEYS[1], field) end
end
return 1
`;

type FairnessClient = Redis & {
  forgesyncJobsRank(state: string, waiting: string, ...args: Array<string | number>): Promise<number[]>;
  forgesyncJobsStarted(state: string, waiting: string, ...args: Array<string | number>): Promise<number>;
};

interface RankRequest {
  key: string;
  bucket: string;
  resolve: (priority: number) => void;
  reject: (error: unknown) => void;
}

/** The fairness scripts of one transport, on its command connection. */
export class Fairness {
  readonly #client: FairnessClient;
  readonly #keys = new Map<string, [string, string]>();
  readonly #ranks = new Map<string, RankRequest[]>();
  readonly #starts = new Map<string, Array<string | number>>();
  #flushing = false;
  #startTimer: NodeJS.Timeout | undefined;

  constructor(
    client: Redis,
    readonly prefix: string,
    private readonly onError: (err: unknown) => void,
  ) {
    // defineCommand: EVALSHA, and EVAL when the server lacks the script (first use, restart).
    client.defineCommand('forgesyncJobsRank', { numberOfKeys: 2, lua: RANK });
    client.defineCommand('forgesyncJobsStarted', { numberOfKeys: 2, lua: STARTED });
    this.#client = client as FairnessClient;
  }

  /** The priority for a job of `key` in `bucket`. */
  rank(kind: string, key: string, bucket: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const pending = this.#ranks.get(kind);
      if (pending) pending.push({ key, bucket, resolve, reject });
      else this.#ranks.set(kind, [{ key, bucket, resolve, reject }]);
      this.#schedule();
    });
  }

  /**
   * Records that a job of `key` in `bucket`, of priority `round`, has started. Sent within
   * START_FLUSH_MS, with the others of that period; failures go to onError.
   */
  started(kind: string, key: string, bucket: string, round: number): void {
    const pending = this.#starts.get(kind);
    if (pending) pending.push(key, bucket, round);
    else this.#starts.set(kind, [key, bucket, round]);
    this.#startTimer ??= setTimeout(() => void this.flushStarts(), START_FLUSH_MS);
  }

  /** Sends the start reports not sent yet. */
  async flushStarts(): Promise<void> {
    clearTimeout(this.#startTimer);
    this.#startTimer = undefined;
    const sending: Array<Promise<unknown>> = [];
    for (const [kind, starts] of this.#starts) {
      const [state, waiting] = this.#keysOf(kind);
      for (let i = 0; i < starts.length; i += 3 * BATCH) {
        sending.push(this.#client.forgesyncJobsStarted(state, waiting, ...starts.slice(i, i + 3 * BATCH)).catch(this.onError));
      }
    }
    this.#starts.clear();
    await Promise.all(sending);
  }

  #keysOf(kind: string): [string, string] {
    let keys = this.#keys.get(kind);
    if (!keys) {
      keys = [`${this.prefix}:${kind}:fairness`, `${this.prefix}:${kind}:fairness-waiting`];
      this.#keys.set(kind, keys);
    }
    return keys;
  }

  #schedule(): void {
    if (this.#flushing) return;
    this.#flushing = true;
    // After the microtasks of this turn: every enqueue they make joins the batch.
    process.nextTick(() => this.#flushRanks());
  }

  #flushRanks(): void {
    this.#flushing = false;
    for (const [kind, ranks] of this.#ranks) {
      const [state, waiting] = this.#keysOf(kind);
      for (let i = 0; i < ranks.length; i += BATCH) {
        const batch = ranks.slice(i, i + BATCH);
        const args: Array<string | number> = [MAX_PRIORITY];
        for (const r of batch) args.push(r.key, r.bucket);
        this.#client.forgesyncJobsRank(state, waiting, ...args).then(
          (priorities) => batch.forEach((r, j) => r.resolve(Number(priorities[j]))),
          (err: unknown) => batch.forEach((r) => r.reject(err)),
        );
      }
    }
    this.#ranks.clear();
  }
}
