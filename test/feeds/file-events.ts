import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CloudEvent } from '../../src/feeds/events.js';
import { OPEN_PREFIX as OPEN_FILE_PREFIX } from '../../src/feeds/sinks/file.js';

export { OPEN_FILE_PREFIX };

/**
 * A file sink's files in `dir`, delivered and open, in delivery order (an
 * open file sorts by its name without the prefix): what a reader that also
 * tails the open file sees.
 */
export function fileSinkFiles(dir: string): { name: string; text: string }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    // Nothing there yet, or a file in the directory's place (a sink made to fail).
    if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return [];
    throw error;
  }
  return names
    .filter((name) => name.endsWith('.ndjson') && (!name.startsWith('.') || name.startsWith(OPEN_FILE_PREFIX)))
    .map((name) => ({ name: name.replace(OPEN_FILE_PREFIX, ''), text: readFileSync(join(dir, name), 'utf8') }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Every event a file sink wrote to `dir`, in delivery order. */
export function fileSinkEvents(dir: string): CloudEvent[] {
  return fileSinkFiles(dir).flatMap(({ text }) => text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as CloudEvent));
}
