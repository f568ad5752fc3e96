import { readFileSync, renameSync, writeFileSync } from 'node:fs';

/*
 * The small JSON records snapshots keep on disk (cache records, holds). Synchronous:
 * a few hundred bytes each, where a thread-pool round trip would cost more than the I/O.
 */

/** The record in `file`, or undefined when it is missing or unreadable. */
export function readJsonFile<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Writes `value` to `file` through a temporary file and a rename: readers see the old record or the new one. */
export function writeJsonFile(file: string, value: unknown): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(value));
  renameSync(`${file}.tmp`, file);
}
