import type { Compilable, Kysely } from 'kysely';
import { runAtomically, type Step } from '../../store/atomic.js';
import type { Schema } from '../../store/types.js';

/** Raised inside a batch when a guard refused the write: the batch rolls back. */
class GuardRefused extends Error {}

/**
 * Runs `guards` and then `steps` in one transaction. Each guard is an
 * UPDATE … RETURNING that returns a row only when the write may apply (a
 * fence, a run, a state); if one returns none, nothing of the batch is
 * kept and the result is null (what writeFenced expects of a refused
 * write). Otherwise true.
 */
export async function runGuarded(db: Kysely<Schema>, guards: readonly Compilable[], steps: readonly (Compilable | null)[]): Promise<true | null> {
  const batch: Step[] = guards.map((guard, index) => (previous) => {
    if (index > 0 && previous[index - 1]!.length === 0) throw new GuardRefused();
    return guard;
  });
  batch.push((previous) => {
    if (previous[guards.length - 1]!.length === 0) throw new GuardRefused();
    return null;
  });
  for (const step of steps) if (step !== null) batch.push(() => step);
  try {
    await runAtomically(db, batch);
    return true;
  } catch (error) {
    if (error instanceof GuardRefused) return null;
    throw error;
  }
}
