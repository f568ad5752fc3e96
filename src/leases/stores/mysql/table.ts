import type { Sessions } from './sessions.js';
import * as sql from './sql.js';

/**
 * Creates the table, or moves an earlier version's InnoDB table to MEMORY,
 * and drops rows of keys long unused. A user without CREATE or ALTER can use
 * a table made by an admin: only the final probe must succeed.
 */
export async function ensureTable(sessions: Sessions): Promise<void> {
  const session = await sessions.connect();
  const run = <T>(text: string) => session.run<T>(text, [], 30_000);
  try {
    const [status] = await run<{ engine: string | null; max_bytes: string | number | null }[]>(sql.TABLE_STATUS);
    await run(sql.SET_TABLE_CAP);
    if (!status) {
      // Several processes may start together; IF NOT EXISTS makes that safe.
      await run(sql.CREATE_TABLE);
    } else if (status.engine?.toUpperCase() !== 'MEMORY' || isBelowCap(status.max_bytes)) {
      // Best effort: the store works on any engine, only slower, and with
      // the server's default cap the table just holds fewer keys.
      await run(sql.TO_MEMORY).catch(() => {});
    }
    await run(sql.SWEEP).catch(() => {});
    await run(`SELECT 1 FROM ${sql.TABLE} LIMIT 0`);
    sessions.end(session); // its max_heap_table_size is not for lease work
  } catch (err) {
    sessions.destroy(session);
    throw err;
  }
}

/** A MEMORY table capped below MAX_TABLE_BYTES (a server restart resets the cap). Unknown (0 or NULL) is left alone. */
function isBelowCap(maxBytes: string | number | null): boolean {
  const max = Number(maxBytes);
  return max > 0 && max < sql.MAX_TABLE_BYTES * 0.9;
}
