import { setTimeout as sleep } from 'node:timers/promises';
import { describeHolder } from '../../leases/errors.js';
import type { LeaseManager } from '../../leases/manager.js';
import type { LeaseHolder } from '../../leases/types.js';
import { ImportWaitTimeoutError } from '../errors.js';
import type { ImportRecord } from '../store/imports.js';
import { importLeaseKey, type CoordinatorOutcome } from './coordinator.js';

/** How `--wait` waits: at most `timeoutMs`, looking every `pollMs` (default 100), told the holder once (`onWait`). */
export interface RunWaitingOptions {
  timeoutMs: number;
  pollMs?: number;
  signal?: AbortSignal;
  onWait?: (holder: LeaseHolder) => void;
}

type Ran = { outcome: CoordinatorOutcome; record: ImportRecord };

/**
 * What `--wait` does: runs the import here (`runHere`), and when another
 * process holds its lease, waits for that holder — a live one until it
 * finishes, a dead one until its lease lapses — then runs (as `forgesync
 * sync --wait` does for a source: the lease is looked at every `pollMs`,
 * and taken once free). `onWait` is told the holder once, when the wait
 * begins. A signal that fires during the wait ends it ('stopped').
 * @throws ImportWaitTimeoutError when the lease is still held after `timeoutMs`.
 */
export async function runWaiting(
  deps: { leases: Pick<LeaseManager, 'inspect'>; runHere(name: string, signal?: AbortSignal): Promise<Ran>; get(name: string): Promise<ImportRecord> },
  name: string,
  options: RunWaitingOptions,
): Promise<Ran> {
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const pollMs = options.pollMs ?? 100;
  let told = false;
  for (;;) {
    const ran = await deps.runHere(name, options.signal);
    if (ran.outcome !== 'skipped') return ran;
    const key = importLeaseKey(ran.record.name);
    for (let holder = await deps.leases.inspect(key); holder; holder = await deps.leases.inspect(key)) {
      if (!told) options.onWait?.(holder);
      told = true;
      const left = deadline - Date.now();
      if (left <= 0) throw new ImportWaitTimeoutError(ran.record.name, describeHolder(holder), Date.now() - started);
      const paused = await sleep(Math.min(pollMs, left), true, options.signal ? { signal: options.signal } : {}).catch(() => false);
      if (!paused) return { outcome: 'stopped', record: await deps.get(name) };
    }
    // Free: the holder finished, or its lease lapsed. Take it (another waiter may be quicker: then wait again).
  }
}
