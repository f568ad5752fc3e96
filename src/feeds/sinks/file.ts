import { constants } from 'node:fs';
import { open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { OutgoingEvent } from '../events.js';
import { InvalidSinkOptionError } from './errors.js';
import { fileSinkDirectory, openDirectoryInRoot } from './file-root.js';
import { abortedOutcome, delivered, errorText, failed } from './outcomes.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from './types.js';
import { redactSinkUrl } from './url.js';

/** A file is closed and the next one started beyond this size, unless the feed says otherwise. */
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024;
/** What a delivered file's name looks like; its leading timestamp is what it sorts by. */
const NAME = /^(\d{15})-\d{7}-\d{12}\.ndjson$/;
/** Filesystems that cannot fsync a directory say so with these; nothing more can be done there. */
const NO_DIRECTORY_SYNC = new Set(['EINVAL', 'ENOTSUP', 'EISDIR']);
/** A file is only ever made new (never one that exists, nor through a symbolic link), for writing. */
const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Numbers the files of this process, across sinks: with the timestamp and pid, names are unique and ordered. */
let counter = 0;

/** One file of a delivery: the events [start, end) as NDJSON. */
interface Part {
  start: number;
  end: number;
  text: string;
}

/**
 * NDJSON files in a directory (`file:///abs/dir`) inside the feed file root
 * `options.fileRoot` (see file-root.ts: checked when opened, and on disk
 * before every write, symbolic links included): each delivery's events,
 * one structured CloudEvent per line, in files of at most `batch` events
 * and `maxFileBytes` bytes (a single longer event gets a file of its own).
 * A file is written as `.tmp-<name>`, fsynced and renamed into place, and
 * the directory fsynced, before its events are acknowledged: a reader never
 * sees a partial file, and must skip dot-files (a crash may leave a
 * `.tmp-` file behind, which can be deleted). Names are
 * `<ms timestamp, 15 digits>-<pid, 7>-<counter, 12>.ndjson`: sorted by
 * name, the files are in delivery order, across restarts too (a new sink
 * starts after the newest name it finds, whatever the clock says).
 */
export function createFileSink(url: URL, options: SinkOptions): FeedSink {
  const root = options.fileRoot;
  if (typeof root !== 'string' || root === '') throw new InvalidSinkOptionError('a file sink needs the feed file root its directory must be inside (fileRoot)');
  return new FileSink(fileSinkDirectory(url, root), root, redactSinkUrl(url.href).slice(0, 200), options);
}

class FileSink implements FeedSink {
  readonly kind = 'file';
  /** The directory as the URL names it (for messages). */
  readonly #directory: string;
  readonly #root: string;
  readonly #shownUrl: string;
  readonly #options: SinkOptions;
  readonly #maxBytes: number;
  /** The timestamp of the last name given; undefined until the directory was read. */
  #lastMs: number | undefined;
  /** Deliveries write one after another, so that names are taken in the order files appear. */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(directory: string, root: string, shownUrl: string, options: SinkOptions) {
    this.#directory = directory;
    this.#root = root;
    this.#shownUrl = shownUrl;
    this.#options = options;
    this.#maxBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  }

  deliver(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
    if (events.length === 0) return Promise.resolve([]);
    if (this.#closed) return Promise.resolve(events.map(() => failed('the sink is closed')));
    const run = this.#queue.then(() => this.#write(events, signal));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#queue;
  }

  async #write(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
    if (signal.aborted) return events.map(() => abortedOutcome(signal));
    const parts = this.#split(events);
    let written = 0;
    let failure: unknown;
    // Where the files go: the directory's real path, checked again before each write (the operator may have moved things).
    let directory = this.#directory;
    try {
      directory = await openDirectoryInRoot(this.#directory, this.#root, this.#shownUrl);
      this.#lastMs ??= await this.#newestTimestamp(directory);
      // In order, stopping at the first failure: what is in place is always a prefix of the delivery.
      for (; written < parts.length && !signal.aborted; written++) await this.#writePart(directory, parts[written]!);
    } catch (error) {
      failure = error;
    }
    // The renames are durable once the directory is.
    if (written > 0) {
      try {
        await syncDirectory(directory);
      } catch (error) {
        failure ??= error;
        written = 0;
      }
    }
    const outcomes: DeliveryOutcome[] = [];
    parts.forEach((part, index) => {
      const outcome = index < written ? delivered : failure === undefined ? abortedOutcome(signal) : failed(`writing to ${this.#directory} failed: ${errorText(failure)}`);
      for (let i = part.start; i < part.end; i++) outcomes.push(outcome);
    });
    return outcomes;
  }

  /** The events in files of at most `batch` events and `maxFileBytes` bytes. */
  #split(events: readonly OutgoingEvent[]): Part[] {
    const parts: Part[] = [];
    let current: { start: number; lines: string[]; bytes: number } | undefined;
    const flush = (end: number): void => {
      if (current) parts.push({ start: current.start, end, text: current.lines.join('') });
    };
    events.forEach((entry, index) => {
      const line = `${entry.body}\n`;
      const bytes = Buffer.byteLength(line);
      if (current && (current.lines.length >= this.#options.batch || current.bytes + bytes > this.#maxBytes)) {
        flush(index);
        current = undefined;
      }
      current ??= { start: index, lines: [], bytes: 0 };
      current.lines.push(line);
      current.bytes += bytes;
    });
    flush(events.length);
    return parts;
  }

  async #writePart(directory: string, part: Part): Promise<void> {
    const name = this.#nextName();
    const temporary = join(directory, `.tmp-${name}`);
    try {
      // Exclusive: never write into a file someone else has open under this name, nor through a link.
      const handle = await open(temporary, NEW_FILE, 0o644);
      try {
        await handle.writeFile(part.text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, join(directory, name));
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
  }

  #nextName(): string {
    // Never behind the last name given (nor the newest file found): a clock set back cannot reorder files.
    const ms = Math.max(Date.now(), this.#lastMs ?? 0);
    this.#lastMs = ms;
    counter++;
    return `${String(ms).padStart(15, '0')}-${String(process.pid).padStart(7, '0')}-${String(counter).padStart(12, '0')}.ndjson`;
  }

  /** Just past the timestamp of the newest delivered file in the directory (0 if none), so new names sort after it. */
  async #newestTimestamp(directory: string): Promise<number> {
    let newest = -1;
    for (const name of await readdir(directory)) {
      const ms = NAME.exec(name)?.[1];
      if (ms !== undefined) newest = Math.max(newest, Number(ms));
    }
    return newest + 1;
  }
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await handle.sync();
  } catch (error) {
    if (!NO_DIRECTORY_SYNC.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
  } finally {
    await handle.close();
  }
}
