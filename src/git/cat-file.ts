import { GitError, InvalidGitOptionError } from './errors.js';
import type { GitProcess, GitRunner } from './runner.js';

/** An object read from a repository. */
export interface GitObject {
  oid: string;
  type: 'blob' | 'tree' | 'commit' | 'tag';
  size: number;
  /** Present for `contents` requests only. */
  content?: Buffer;
}

interface Pending {
  withContent: boolean;
  resolve: (object: GitObject | undefined) => void;
  reject: (error: Error) => void;
}

/** Stopped after this long without a request: a process per idle mirror would add up. */
const DEFAULT_IDLE_MS = 30_000;
const HEADER = /^([0-9a-f]{40}|[0-9a-f]{64}) (blob|tree|commit|tag) (\d+)$/;

/**
 * One long-lived `git cat-file --batch-command` on a repository: object reads
 * without a process start each. Requests are answered in order; the process
 * starts on the first request, stops after an idle spell, and is restarted
 * after a failure.
 */
export class CatFile {
  #process: GitProcess | undefined;
  #pending: Pending[] = [];
  #buffer: Buffer = Buffer.alloc(0);
  #idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly runner: GitRunner,
    readonly gitDir: string,
    private readonly idleMs = DEFAULT_IDLE_MS,
  ) {}

  /** Type and size of `spec` (`<sha>`, `<sha>:<path>`, `<sha>^{commit}`); undefined when it does not exist. */
  info(spec: string): Promise<GitObject | undefined> {
    return this.#request('info', spec, false);
  }

  /** The object `spec` names, with its content; undefined when it does not exist. */
  contents(spec: string): Promise<GitObject | undefined> {
    return this.#request('contents', spec, true);
  }

  /** Stops the process; pending requests fail. */
  close(): void {
    this.#fail(new GitError(`git cat-file on ${this.gitDir} was closed`));
  }

  #request(command: 'info' | 'contents', spec: string, withContent: boolean): Promise<GitObject | undefined> {
    if (spec.length === 0 || /[\n\r\0]/.test(spec)) {
      return Promise.reject(new InvalidGitOptionError('object names must be non-empty and single-line'));
    }
    const git = this.#ensure();
    clearTimeout(this.#idle);
    return new Promise((resolve, reject) => {
      this.#pending.push({ withContent, resolve, reject });
      git.child.stdin.write(`${command} ${spec}\n`);
    });
  }

  #ensure(): GitProcess {
    if (this.#process) return this.#process;
    const git = this.runner.start([`--git-dir=${this.gitDir}`, 'cat-file', '--batch-command']);
    this.#process = git;
    git.child.stdout.on('data', (chunk: Buffer) => this.#onData(chunk));
    git.child.on('error', (error) => this.#fail(new GitError(`git cat-file failed: ${error.message}`, { cause: error }), git));
    git.child.on('close', (code) => {
      const stderr = git.stderr().trim();
      this.#fail(new GitError(`git cat-file on ${this.gitDir} exited (${code ?? 'killed'})${stderr ? `: ${stderr}` : ''}`), git);
    });
    return git;
  }

  #onData(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    while (this.#pending.length > 0) {
      const newline = this.#buffer.indexOf(10);
      if (newline === -1) return;
      const header = this.#buffer.subarray(0, newline).toString('utf8');
      const match = HEADER.exec(header);
      const request = this.#pending[0] as Pending;
      if (!match) {
        // `<spec> missing` or `<spec> ambiguous`: no body follows.
        this.#buffer = this.#buffer.subarray(newline + 1);
        this.#pending.shift();
        request.resolve(undefined);
        continue;
      }
      const size = Number(match[3]);
      const object: GitObject = { oid: match[1] as string, type: match[2] as GitObject['type'], size };
      if (request.withContent) {
        // The body is followed by one newline.
        if (this.#buffer.length < newline + 1 + size + 1) return;
        object.content = Buffer.from(this.#buffer.subarray(newline + 1, newline + 1 + size));
        this.#buffer = this.#buffer.subarray(newline + 1 + size + 1);
      } else {
        this.#buffer = this.#buffer.subarray(newline + 1);
      }
      this.#pending.shift();
      request.resolve(object);
    }
    if (this.#pending.length === 0) this.#scheduleIdleStop();
  }

  #scheduleIdleStop(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.close(), this.idleMs);
    this.#idle.unref();
  }

  #fail(error: Error, only?: GitProcess): void {
    if (only && this.#process !== only) return;
    clearTimeout(this.#idle);
    this.#process?.stop();
    this.#process = undefined;
    this.#buffer = Buffer.alloc(0);
    const pending = this.#pending;
    this.#pending = [];
    for (const request of pending) request.reject(error);
  }
}

/**
 * One long-lived CatFile per repository, started on first use (each stops
 * by itself after an idle spell and restarts on the next request): what
 * every reader of mirrors' objects shares.
 */
export class CatFiles {
  readonly #processes = new Map<string, CatFile>();

  constructor(
    private readonly runner: GitRunner,
    private readonly idleMs?: number,
  ) {}

  /** The reader of `gitDir`. */
  of(gitDir: string): CatFile {
    let catFile = this.#processes.get(gitDir);
    if (!catFile) {
      catFile = new CatFile(this.runner, gitDir, this.idleMs);
      this.#processes.set(gitDir, catFile);
    }
    return catFile;
  }

  /** Stops the reader of one repository (it is being removed or replaced). */
  forget(gitDir: string): void {
    this.#processes.get(gitDir)?.close();
    this.#processes.delete(gitDir);
  }

  /** Stops every reader. */
  close(): void {
    for (const catFile of this.#processes.values()) catFile.close();
    this.#processes.clear();
  }
}

/** One entry of a tree object. */
export interface TreeEntry {
  /** Octal mode as git prints it: `100644`, `100755`, `120000` (symlink), `40000` (tree), `160000` (submodule). */
  mode: string;
  type: 'blob' | 'tree' | 'commit';
  oid: string;
  name: string;
}

/** Parses a raw tree object (`<mode> <name>\0<binary oid>` entries). */
export function parseTree(content: Buffer, oidHexLength: number): TreeEntry[] {
  const oidBytes = oidHexLength / 2;
  const entries: TreeEntry[] = [];
  let offset = 0;
  while (offset < content.length) {
    const space = content.indexOf(32, offset);
    const nul = content.indexOf(0, space + 1);
    if (space === -1 || nul === -1 || nul + 1 + oidBytes > content.length) throw new GitError('malformed tree object');
    const mode = content.subarray(offset, space).toString('latin1');
    const name = content.subarray(space + 1, nul).toString('utf8');
    const oid = content.subarray(nul + 1, nul + 1 + oidBytes).toString('hex');
    const type = mode === '40000' ? 'tree' : mode === '160000' ? 'commit' : 'blob';
    entries.push({ mode, type, oid, name });
    offset = nul + 1 + oidBytes;
  }
  return entries;
}
