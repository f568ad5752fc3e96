import { open, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * How many records GitHub's exporter puts in one file: `issue_events_000001.json`
 * holds records 1–100, `issue_events_000002.json` the next 100, and so on
 * (counted in a Migrations API archive of a real repository).
 */
export const RECORDS_PER_FILE = 100;

/** Bytes gathered before they are written out: a few large writes rather than one per record. */
const FLUSH_BYTES = 256 * 1024;

/** `issues_000001.json`: the prefix, then the file's 1-based index in six digits. */
export function archiveFileName(prefix: string, index: number): string {
  return `${prefix}_${String(index).padStart(6, '0')}.json`;
}

/**
 * One record type's files in the archive: JSON arrays of at most
 * `perFile` records each, written as records arrive (never more than one
 * buffer's worth in memory). Pretty-printed with two spaces, as GitHub's
 * exporter writes them. No record, no file: an archive has no empty files.
 *
 * `counts` receives `file name → records` as files fill.
 */
export class RecordFiles {
  readonly #dir: string;
  readonly #prefix: string;
  readonly #perFile: number;
  readonly #counts: Record<string, number>;
  #handle: FileHandle | undefined;
  #name = '';
  #index = 0;
  #inFile = 0;
  #total = 0;
  #buffer: string[] = [];
  #buffered = 0;

  constructor(dir: string, prefix: string, perFile: number, counts: Record<string, number>) {
    this.#dir = dir;
    this.#prefix = prefix;
    this.#perFile = perFile;
    this.#counts = counts;
  }

  /** Records written so far, over all files. */
  get total(): number {
    return this.#total;
  }

  async write(record: unknown): Promise<void> {
    if (this.#handle && this.#inFile === this.#perFile) await this.#finishFile();
    if (!this.#handle) await this.#startFile();
    const json = JSON.stringify(record, null, 2).replace(/\n/g, '\n  ');
    this.#push(`${this.#inFile === 0 ? '' : ',\n'}  ${json}`);
    this.#inFile++;
    this.#total++;
    this.#counts[this.#name] = this.#inFile;
    if (this.#buffered >= FLUSH_BYTES) await this.#flush();
  }

  /** Ends the last file. Idempotent. */
  async close(): Promise<void> {
    if (this.#handle) await this.#finishFile();
  }

  /** Closes the open file without finishing it (the export failed and its directory is removed). */
  async abandon(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    this.#buffer = [];
    this.#buffered = 0;
    await handle?.close().catch(() => {});
  }

  async #startFile(): Promise<void> {
    this.#index++;
    this.#inFile = 0;
    this.#name = archiveFileName(this.#prefix, this.#index);
    this.#handle = await open(join(this.#dir, this.#name), 'wx');
    this.#push('[\n');
  }

  async #finishFile(): Promise<void> {
    this.#push('\n]\n');
    await this.#flush();
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close();
  }

  #push(text: string): void {
    this.#buffer.push(text);
    this.#buffered += text.length;
  }

  async #flush(): Promise<void> {
    if (this.#buffer.length === 0 || !this.#handle) return;
    const text = this.#buffer.join('');
    this.#buffer = [];
    this.#buffered = 0;
    // writeFile writes all of it (write may stop short), from the current position.
    await this.#handle.writeFile(text);
  }
}

/** Writes one small JSON document (schema.json). */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await writeFile(path, `${JSON.stringify(value)}\n`, { flag: 'wx' });
}
