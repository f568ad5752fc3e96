import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import { runAtomically, type Step } from './atomic.js';
import { sqliteHandle } from './connect.js';
import type { Schema } from './types.js';

/** Parameters from which a batch goes to the writer thread: about ten stored objects. */
const OFF_THREAD_PARAMETERS = 120;

/** Raised inside a batch when a guard refused the write: the batch rolls back. */
class GuardRefused extends Error {}

/**
 * Runs `guards` and then `steps` in one transaction. Each guard is an
 * UPDATE … RETURNING that returns a row only when the write may apply (a
 * fence, a run, a state); if one returns none, nothing of the batch is
 * kept and the result is null (what writeFenced expects of a refused
 * write). Otherwise true. On a SQLite file a large batch runs on the
 * database's writer thread (see sqlite-writer.ts), such as an import's
 * page writes.
 */
export async function runGuarded(db: Kysely<Schema>, guards: readonly Compilable[], steps: readonly (Compilable | null)[]): Promise<true | null> {
  // Compiled once, whichever connection runs them.
  const guardQueries = guards.map((guard) => guard.compile());
  const stepQueries = steps.flatMap((step) => (step ? [step.compile()] : []));
  const writer = sqliteHandle(db)?.writer;
  // A small batch (a job's answer, a cursor) is cheaper to write here than to send.
  if (writer && stepQueries.reduce((sum, query) => sum + query.parameters.length, 0) >= OFF_THREAD_PARAMETERS) {
    return (await writer.write({ guards: guardQueries, steps: stepQueries })) === 'committed' ? true : null;
  }
  const compiled = (query: CompiledQuery): Compilable => ({ compile: () => query });
  const batch: Step[] = guardQueries.map((guard, index) => (previous) => {
    if (index > 0 && previous[index - 1]!.length === 0) throw new GuardRefused();
    return compiled(guard);
  });
  batch.push((previous) => {
    if (previous[guards.length - 1]!.length === 0) throw new GuardRefused();
    return null;
  });
  for (const step of stepQueries) batch.push(() => compiled(step));
  try {
    await runAtomically(db, batch);
    return true;
  } catch (error) {
    if (error instanceof GuardRefused) return null;
    throw error;
  }
}
