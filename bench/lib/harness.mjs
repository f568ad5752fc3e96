// Measurement loops shared by every backend and contender.
//
// A contender is
//   { name, role: 'subject' | 'baseline' | 'peer', describe,
//     sessions(n) -> [{ tryAcquire(key) -> Promise<handle|null>, release(handle) -> Promise<void> }],
//     close() }
// sessions(n) hands out n independent clients for n concurrent workers; most
// contenders return the same shared client n times (one connection or pool,
// as a real process would use), raw MySQL returns one connection per worker
// because GET_LOCK belongs to a session and is re-entrant within it.
//
// The loops check the clock on every iteration instead of waiting for a
// timer: better-sqlite3 answers synchronously, so its promises settle in
// microtasks and a setTimeout would never get to fire.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Collects garbage left by the previous measurement so it is not billed to the
 * next one (twice: the second pass takes what the first one's finalizers freed).
 */
export function collectGarbage() {
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    globalThis.gc();
  }
}

/**
 * One client, the same key taken and given back over and over (a job that
 * re-takes its lease is the realistic case; it also keeps the table/keyspace
 * at one row per contender). Returns the pairs done and the time taken.
 */
export async function runSequential(session, key, durationMs) {
  const started = performance.now();
  const end = started + durationMs;
  let pairs = 0;
  let now = started;
  do {
    const handle = await session.tryAcquire(key);
    if (!handle) throw new Error(`sequential try-acquire of ${key} failed although this client released it`);
    await session.release(handle);
    pairs++;
  } while ((now = performance.now()) < end);
  const elapsedMs = now - started;
  return { pairs, attempts: pairs, elapsedMs, pairsPerSec: (pairs * 1000) / elapsedMs, attemptsPerSec: (pairs * 1000) / elapsedMs };
}

/**
 * `workers` concurrent async loops in this process fighting over `keys` with
 * try-acquire (never waiting): worker w tries keys[(w + i) % keys.length] on
 * its i-th attempt, and on success releases at once; after a failed try it
 * pauses `pauseMs` (0: straight on). Every contender sees exactly this
 * pattern. Counts successful pairs and attempts; the time includes draining
 * the attempts in flight when the clock runs out.
 */
export async function runContended(sessions, keys, durationMs, pauseMs = 0) {
  const started = performance.now();
  const end = started + durationMs;
  let attempts = 0;
  let pairs = 0;
  await Promise.all(
    sessions.map(async (session, w) => {
      let i = w;
      while (performance.now() < end) {
        const key = keys[i++ % keys.length];
        attempts++;
        const handle = await session.tryAcquire(key);
        if (handle) {
          await session.release(handle);
          pairs++;
        } else if (pauseMs > 0) {
          await sleep(pauseMs);
        }
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  return {
    pairs,
    attempts,
    elapsedMs,
    pairsPerSec: (pairs * 1000) / elapsedMs,
    attemptsPerSec: (attempts * 1000) / elapsedMs,
  };
}

/** Rejects if `promise` has not settled within `ms` (a backend that stalls mid-run). */
export async function withDeadline(promise, ms, what) {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** (max - min) / median, in percent: how much the rounds disagreed. */
export function spreadPct(values) {
  if (values.length < 2) return 0;
  const m = median(values);
  return m > 0 ? ((Math.max(...values) - Math.min(...values)) / m) * 100 : 0;
}

/** The contenders in round `r`, rotated so nobody always runs first (or right after the same neighbour). */
export function rotate(list, r) {
  const k = r % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}
