import { getMaxListeners, setMaxListeners } from 'node:events';

/**
 * How many listeners one task of a group may have on the group's shared
 * signal at once: its lease, a wait, a request in flight, a retry's sleep.
 */
export const LISTENERS_PER_TASK = 4;

/**
 * Lets `count` listeners wait on `signal` at once without Node's
 * MaxListenersExceededWarning ("possible EventTarget memory leak"): for a
 * signal shared by that many concurrent tasks (a job transport's shutdown,
 * an import run's abort, a client's requests in flight), each of which
 * removes its listener when done, that many is the design, not a leak. The
 * limit only grows, so the warning still tells of listeners beyond it.
 */
export function allowListeners(signal: AbortSignal, count: number): void {
  setMaxListeners(Math.max(getMaxListeners(signal), count + 10), signal);
}
