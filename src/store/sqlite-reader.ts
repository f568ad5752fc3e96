import type { CompiledQuery } from 'kysely';
import { BUSY_TIMEOUT_MS } from '../util/sqlite-url.js';
import type { WorkerPool } from '../threads/types.js';
import { openSqliteThread } from './sqlite-thread.js';

/** Rows as sqlite-reader.worker.cjs packs them: see that file. */
interface Packed {
  columns: number;
  count: number;
  kinds: Uint8Array;
  numbers: Float64Array;
  text: string;
  lengths: Uint32Array;
}

/**
 * Runs read-only queries on a SQLite file from a worker thread with a
 * read-only connection of its own (sqlite-reader.worker.cjs), rows coming
 * back as arrays of column values. Why: a feed streaming to a sink reads
 * its next window of the change log while the current one is out, and on
 * the event loop that read (SQLite's stepping, a JavaScript string per
 * column) took a third of what the feed adds to the sink's own client; in
 * the thread it runs on another core, and unpacking the answer costs a
 * fraction of it. Reads see what is committed when the query starts (WAL),
 * as the main connection's do outside a transaction.
 */
export class SqliteReader {
  readonly #thread: WorkerPool<{ sql: string; parameters: readonly unknown[] }, Packed>;

  constructor(file: string) {
    this.#thread = openSqliteThread(new URL('./sqlite-reader.worker.cjs', import.meta.url), file, 'reader', { busyTimeoutMs: BUSY_TIMEOUT_MS });
  }

  /** The rows of `query`, each an array of its column values in order (numbers, strings or null). */
  async rows(query: CompiledQuery): Promise<unknown[][]> {
    const { columns, count, kinds, numbers, text, lengths } = await this.#thread.request({ sql: query.sql, parameters: query.parameters });
    const rows: unknown[][] = new Array(count);
    let cell = 0;
    let at = 0;
    let nextText = 0;
    for (let index = 0; index < count; index++) {
      const row: unknown[] = new Array(columns);
      for (let column = 0; column < columns; column++, cell++) {
        const kind = kinds[cell];
        if (kind === 1) row[column] = numbers[cell];
        else if (kind === 2) {
          const end = at + lengths[nextText++]!;
          row[column] = text.slice(at, end);
          at = end;
        } else row[column] = null;
      }
      rows[index] = row;
    }
    return rows;
  }

  /** Starts the thread ahead of the first query (a long-running process's first feed delivery should not wait for it). */
  warm(): void {
    this.#thread.warm();
  }

  /** Closes the thread's connection once the queries sent have been answered; idempotent. */
  close(): Promise<void> {
    return this.#thread.close();
  }
}
