import { constants } from 'node:fs';
import { open, readdir, rename, stat, truncate, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { OutgoingEvent } from '../events.js';
import { InvalidSinkOptionError } from './errors.js';
import { fileSinkDirectory, openDirectoryInRoot } from './file-root.js';
import { abortedOutcome, delivered, errorText, failed } from './outcomes.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from './types.js';
import { redactSinkUrl } from './url.js';

/** A file is rolled into place beyond this size, unless the feed's settings say otherwise. */
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024;
/** A file is rolled into place this long after it was opened, unless the feed's settings say otherwise. */
export const DEFAULT_MAX_FILE_AGE_MS = 60_000;
/** What a delivered file's name looks like; its leading timestamp is what it sorts by. */
const NAME = /^(\d{15})-\d{7}-\d{12}\.ndjson$/;
/** The file being appended to is this prefix and its future name: a dot-file, which readers of delivered files skip. */
export const OPEN_PREFIX = '.current-';
/** An open file untouched this long past its maximum age was left by a sink that is gone (killed): the next one rolls it. */
const ABANDONED_AFTER_MS = 60_000;
/** Filesystems that cannot fsync a directory say so with these; nothing more can be done there. */
const NO_DIRECTORY_SYNC = new Set(['EINVAL', 'ENOTSUP', 'EISDIR']);
/** A file is only ever made new (never one that exists, nor through a symbolic link), for appending. */
const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_APPEND;

/** Numbers the files of this process, across sinks: with the timestamp and pid, names are unique and ordered. */
let counter = 0;

/** The file a sink appends to until it is rolled into place. */
interface OpenFile {
  directory: string;
  name: string;
  handle: FileHandle;
  /** Bytes in the file, all of them whole lines. */
  bytes: number;
  openedAt: number;
}

/**
 * NDJSON files in a directory (`file:///abs/dir`) inside the feed file root
 * `options.fileRoot` (see file-root.ts: checked when opened, and on disk
 * before every write, symbolic links included), one structured CloudEvent
 * per line. Deliveries are appended to one open file, `.current-<name>`,
 * their lines fsynced before they are acknowledged; the file is rolled into
 * place (renamed `<name>`, the directory fsynced) once it would grow past
 * `maxFileBytes` (a single longer event gets a file of its own), once it is
 * `maxFileAgeMs` old, and when the sink closes. So a directory gets a file
 * a minute at most, not one per delivery, and a reader of the named files
 * never sees a partial one; a reader that wants events sooner may tail the
 * open file, whose lines are appended whole. Names are
 * `<ms timestamp, 15 digits>-<pid, 7>-<counter, 12>.ndjson`: sorted by
 * name, the files are in delivery order, across restarts too (a new sink
 * starts after the newest name it finds, whatever the clock says). A sink
 * killed with a file open leaves it behind; the next sink to write the
 * directory cuts off its partial last line (events never acknowledged) and
 * rolls it into place once it is ABANDONED_AFTER_MS past its maximum age.
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
  readonly #maxBytes: number;
  readonly #maxAgeMs: number;
  /** The timestamp of the last name given; undefined until the directory was read. */
  #lastMs: number | undefined;
  /**
   * The directory's mtime after this sink last changed it (opened or renamed
   * a file; appending changes nothing). Another mtime means another sink (a
   * process the feed's runs moved to) opened or rolled a file since: this
   * sink's open file is rolled before it appends again, so that no two open
   * files ever take turns and the names stay in delivery order.
   */
  #seenMtimeMs: number | undefined;
  /** When an open file that another sink left, fresh at the last look, may be abandoned: the directory is read again then. */
  #recheckAt = Infinity;
  #open: OpenFile | undefined;
  #ageTimer: NodeJS.Timeout | undefined;
  /** Deliveries and rolls go one after another, so that names are taken in the order files appear. */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(directory: string, root: string, shownUrl: string, options: SinkOptions) {
    this.#directory = directory;
    this.#root = root;
    this.#shownUrl = shownUrl;
    this.#maxBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.#maxAgeMs = options.maxFileAgeMs ?? DEFAULT_MAX_FILE_AGE_MS;
  }

  deliver(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
    if (events.length === 0) return Promise.resolve([]);
    if (this.#closed) return Promise.resolve(events.map(() => failed('the sink is closed')));
    return this.#enqueue(() => this.#write(events, signal));
  }

  async close(): Promise<void> {
    if (this.#closed) return this.#queue.then(() => undefined);
    this.#closed = true;
    // A file that cannot be rolled now (its directory gone or unwritable) keeps its acknowledged lines: the next sink
    // writing the directory rolls it once it is abandoned.
    await this.#enqueue(() => this.#roll()).catch(() => undefined);
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(step);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #write(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
    if (signal.aborted) return events.map(() => abortedOutcome(signal));
    let written = 0;
    let failure: unknown;
    try {
      // Where the files go: the directory's real path, checked again before each write (the operator may have moved things).
      const directory = await openDirectoryInRoot(this.#directory, this.#root, this.#shownUrl);
      if (this.#open && this.#open.directory !== directory) await this.#roll();
      const mtimeMs = (await stat(directory)).mtimeMs;
      if (this.#lastMs === undefined || mtimeMs !== this.#seenMtimeMs || Date.now() >= this.#recheckAt) {
        await this.#roll();
        this.#lastMs = Math.max(this.#lastMs ?? 0, await this.#recover(directory));
        await this.#sawDirectory(directory);
      }
      // In order: an abort leaves a prefix of the delivery acknowledged.
      for (const part of this.#parts(events)) {
        if (signal.aborted) break;
        await this.#append(directory, part.text);
        written = part.end;
      }
      await this.#open?.handle.sync();
    } catch (error) {
      failure = error;
      // Whatever was appended may not be durable: none of it is acknowledged (sent again: at least once, by event id).
      written = 0;
    }
    return events.map((_, index) =>
      index < written ? delivered : failure === undefined ? abortedOutcome(signal) : failed(`writing to ${this.#directory} failed: ${errorText(failure)}`),
    );
  }

  /** The events in runs of whole lines, each as long as fits the open file's room (one longer event alone). */
  *#parts(events: readonly OutgoingEvent[]): Generator<{ text: string; end: number }> {
    let lines: string[] = [];
    let bytes = 0;
    // The open file's room for the first part; each later part goes to a new file (see #append).
    let room = this.#room();
    for (const [index, entry] of events.entries()) {
      const line = `${entry.body}\n`;
      const size = Buffer.byteLength(line);
      if (lines.length > 0 && bytes + size > room) {
        yield { text: lines.join(''), end: index };
        lines = [];
        bytes = 0;
        room = this.#maxBytes;
      }
      lines.push(line);
      bytes += size;
    }
    yield { text: lines.join(''), end: events.length };
  }

  /** Bytes the open file may still take before it is rolled (a new file's whole size when none is open). */
  #room(): number {
    return this.#open ? this.#maxBytes - this.#open.bytes : this.#maxBytes;
  }

  /** Appends whole lines to the open file, rolling it first when they would not fit or it is old; opens one when none is. */
  async #append(directory: string, text: string): Promise<void> {
    const size = Buffer.byteLength(text);
    const open = this.#open;
    if (open && (open.bytes + size > this.#maxBytes || Date.now() - open.openedAt >= this.#maxAgeMs)) await this.#roll();
    const file = this.#open ?? (await this.#openFile(directory));
    try {
      await file.handle.write(text);
      file.bytes += size;
    } catch (error) {
      // A partial line would spoil every line after it: cut back to the last whole one, and start a new file next time.
      await file.handle.truncate(file.bytes).catch(() => undefined);
      await this.#roll().catch(() => undefined);
      throw error;
    }
  }

  async #openFile(directory: string): Promise<OpenFile> {
    const name = this.#nextName();
    // Exclusive: never append to a file someone else has open under this name, nor through a link.
    const handle = await open(join(directory, `${OPEN_PREFIX}${name}`), NEW_FILE, 0o644);
    try {
      // The new name is durable before anything in the file is acknowledged.
      await syncDirectory(directory);
    } catch (error) {
      await handle.close();
      throw error;
    }
    this.#open = { directory, name, handle, bytes: 0, openedAt: Date.now() };
    await this.#sawDirectory(directory);
    // Rolled when old even if nothing more comes; the timer does not keep the process alive.
    this.#ageTimer = setTimeout(() => void this.#enqueue(() => this.#rollIfOld()).catch(() => undefined), this.#maxAgeMs);
    this.#ageTimer.unref();
    return this.#open;
  }

  async #rollIfOld(): Promise<void> {
    if (this.#open && Date.now() - this.#open.openedAt >= this.#maxAgeMs) await this.#roll();
  }

  /** Closes the open file and renames it into place, durably; nothing when none is open. */
  async #roll(): Promise<void> {
    const file = this.#open;
    this.#open = undefined;
    clearTimeout(this.#ageTimer);
    if (!file) return;
    try {
      await file.handle.sync();
    } finally {
      await file.handle.close();
    }
    await rename(join(file.directory, `${OPEN_PREFIX}${file.name}`), join(file.directory, file.name));
    await syncDirectory(file.directory);
    await this.#sawDirectory(file.directory);
  }

  /** Notes the directory's mtime after a change of this sink's own (see #seenMtimeMs). */
  async #sawDirectory(directory: string): Promise<void> {
    this.#seenMtimeMs = (await stat(directory)).mtimeMs;
  }

  #nextName(): string {
    // Never behind the last name given (nor the newest file found): a clock set back cannot reorder files.
    const ms = Math.max(Date.now(), this.#lastMs ?? 0);
    this.#lastMs = ms;
    counter++;
    return `${String(ms).padStart(15, '0')}-${String(process.pid).padStart(7, '0')}-${String(counter).padStart(12, '0')}.ndjson`;
  }

  /**
   * Rolls into place the open files that sinks gone without closing left
   * behind (their partial last line cut off), and returns just past the
   * timestamp of the newest file, open or not (0 if none), so new names
   * sort after it.
   */
  async #recover(directory: string): Promise<number> {
    let newest = -1;
    this.#recheckAt = Infinity;
    for (const entry of await readdir(directory)) {
      const name = entry.startsWith(OPEN_PREFIX) ? entry.slice(OPEN_PREFIX.length) : entry;
      const ms = NAME.exec(name)?.[1];
      if (ms === undefined) continue;
      newest = Math.max(newest, Number(ms));
      if (name !== entry) await this.#rollAbandoned(directory, name);
    }
    return newest + 1;
  }

  async #rollAbandoned(directory: string, name: string): Promise<void> {
    const path = join(directory, `${OPEN_PREFIX}${name}`);
    const info = await stat(path);
    const abandonedAt = info.mtimeMs + this.#maxAgeMs + ABANDONED_AFTER_MS;
    if (Date.now() < abandonedAt) {
      // Maybe still in use by a live sink: looked at again once it would be abandoned.
      this.#recheckAt = Math.min(this.#recheckAt, abandonedAt);
      return;
    }
    await truncate(path, await wholeLinesLength(path, info.size));
    await rename(path, join(directory, name));
    await syncDirectory(directory);
  }
}

/** The length of `path` up to its last newline: its whole lines (read from the end, a block at a time). */
async function wholeLinesLength(path: string, size: number): Promise<number> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const block = Buffer.alloc(64 * 1024);
    for (let end = size; end > 0; ) {
      const start = Math.max(0, end - block.length);
      const { bytesRead } = await handle.read(block, 0, end - start, start);
      const newline = block.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline !== -1) return start + newline + 1;
      end = start;
    }
    return 0;
  } finally {
    await handle.close();
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
