import { createWriteStream, linkSync, openSync, rmSync } from 'node:fs';
import type { GitProcess, GitRunner } from '../../git/runner.js';

/*
 * One pack in the cache: generated once, by one `git pack-objects` into a
 * temporary file, and read by every request that asked for it, from the
 * first byte while it is still being written (single flight: 32 identical
 * clones cost one pack-objects, each of them streaming the bytes as they are
 * produced). Each reader gets a link of its own to the file when it joins,
 * so a rename (the entry kept), an unlink (evicted, or not kept) or a
 * failure never pulls bytes from under a reader; and `size` only ever
 * counts bytes already written, so nobody reads past them.
 *
 * A generation that fails (pack-objects exits non-zero or is killed, the
 * disk fills) fails its readers (their hooks exit non-zero, so upload-pack
 * fails the fetch rather than send a truncated pack) and leaves no file.
 */

export type EntryState = 'generating' | 'complete' | 'failed';

/** Why an entry left the cache (the evictions metric's label). */
export type DropReason = 'size' | 'ttl' | 'refs';

export class PackEntry {
  state: EntryState = 'generating';
  /** Bytes written so far (all of them once complete): what readers may read. */
  size = 0;
  /** Where the bytes are: the temporary file while generating, the kept file once complete. */
  path: string;
  /** When it completed; its time to live counts from there. */
  completedAt: number | undefined;
  lastUsedAt: number;
  /** Set when the entry must not be kept once complete (its refs moved, or it is larger than the whole cache), and why. */
  dropWhenComplete: DropReason | undefined;
  /** What failed, for its readers. */
  failure: string | undefined;
  /** Stops the generation (the cache is closing). */
  stop: () => void = () => undefined;
  #waiters: Array<() => void> = [];

  constructor(
    readonly key: string,
    readonly view: string,
    readonly refsDigest: string,
    temporaryPath: string,
    now: number,
  ) {
    this.path = temporaryPath;
    this.lastUsedAt = now;
  }

  /** Resolves at the next change (bytes written, completion, failure). */
  changed(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Wakes the readers waiting for a change. */
  notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * Links `path` to the entry's bytes as they are now, for one reader
   * (synchronous: the entry's own file cannot be renamed or removed
   * meanwhile). The reader's link outlives a rename, an eviction or a
   * failure, until the reader is done and removes it.
   */
  linkForReader(path: string): void {
    linkSync(this.path, path);
  }
}

/** What the cache hears of a generation. */
export interface GenerationEvents {
  /** `bytes` more were written to the entry's file. */
  grew(entry: PackEntry, bytes: number): void;
  /** pack-objects succeeded and every byte is on disk. */
  finished(entry: PackEntry): void;
  /** It failed; `reason` says why. The file is still there (the cache removes it). */
  failed(entry: PackEntry, reason: string): void;
}

/**
 * The git command whose output an entry keeps, run in the entry's view:
 * pack-objects as upload-pack asks for it (through the hook), or a whole
 * upload-pack answer to a clone's request (see responses.ts).
 */
export interface CachedCommand {
  /** git's arguments after `--git-dir <view>`. */
  argv: readonly string[];
  /** `GIT_PROTOCOL` for it (upload-pack's protocol version). */
  gitProtocol?: string | undefined;
}

/** One generation's work. */
export interface Generation {
  runner: GitRunner;
  command: CachedCommand;
  stdin: Buffer;
  timeoutMs: number;
}

/**
 * Runs `git pack-objects` in the entry's view, its stdout written to the
 * entry's temporary file (created here, synchronously, so readers may open
 * it as soon as this returns), with backpressure from the disk.
 */
export function startGeneration(entry: PackEntry, generation: Generation, events: GenerationEvents): void {
  const { runner, command } = generation;
  const out = createWriteStream('', { fd: openSync(entry.path, 'wx', 0o600) });
  let git: GitProcess;
  try {
    // Through the runner (its environment: no hooks, no user configuration), reading the view's objects.
    git = runner.start(['--git-dir', entry.view, ...command.argv], {
      cwd: entry.view,
      timeoutMs: generation.timeoutMs,
      ...(command.gitProtocol === undefined ? {} : { gitProtocol: command.gitProtocol }),
    });
  } catch (error) {
    out.destroy();
    rmSync(entry.path, { force: true });
    throw error;
  }
  let failure: string | undefined;
  let settled = false;
  const settle = (outcome: 'finished' | 'failed') => {
    if (settled) return;
    settled = true;
    if (outcome === 'finished') events.finished(entry);
    else events.failed(entry, failure ?? 'the generation failed');
  };
  const fail = (reason: string) => {
    failure ??= reason;
    git.stop();
    out.destroy();
  };
  entry.stop = () => fail('the pack cache was closed');
  const stdout = git.child.stdout;
  stdout.on('data', (chunk: Buffer) => {
    const more = out.write(chunk, (error) => {
      if (!error && failure === undefined) events.grew(entry, chunk.length);
    });
    if (!more) {
      stdout.pause();
      out.once('drain', () => stdout.resume());
    }
  });
  out.on('error', (error) => fail(`could not write the cache file: ${error.message}`));
  git.child.on('error', (error) => {
    fail(`could not run git: ${error.message}`);
    settle('failed');
  });
  git.child.on('close', (code, signal) => {
    if (failure !== undefined) {
      // Stopped, or the file failed: its bytes may be cut anywhere.
      out.destroy();
      settle('failed');
      return;
    }
    const stderr = code === 0 ? '' : git.stderr().trim().slice(-500);
    const exited = code === 0 ? undefined : `git ${command.argv.find((arg) => arg === 'pack-objects' || arg === 'upload-pack') ?? ''} ${signal ? `was killed (${signal})` : `exited with ${code}`}${stderr ? `: ${stderr}` : ''}`;
    // Every write's callback has run once the stream finished: `size` counts every byte git wrote, also
    // of a run that failed (a whole answer's readers then get git's own error, as upload-pack would send it).
    out.end((error?: Error | null) => {
      if (error) failure ??= `could not write the cache file: ${error.message}`;
      failure ??= exited;
      settle(failure === undefined ? 'finished' : 'failed');
    });
  });
  git.child.stdin.end(generation.stdin);
}

/**
 * Announces the entry's written size to a reader as it grows (`announce`
 * waits while the reader is behind), until the entry is complete; returns
 * its size.
 * @throws when the generation fails (the reader may have copied some bytes) or `announce` throws.
 */
export async function followEntry(entry: PackEntry, announce: (size: number) => Promise<void>): Promise<number> {
  let announced = 0;
  for (;;) {
    if (entry.state === 'failed') throw new Error(entry.failure ?? 'the pack generation failed');
    if (entry.size > announced) {
      announced = entry.size;
      await announce(announced);
      continue;
    }
    if (entry.state === 'complete') return announced;
    await entry.changed();
  }
}
