import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { tmpdir } from 'node:os';
import { buildGitEnv, checkToken, makeRedactor } from './env.js';
import {
  GitAbortedError,
  GitCommandError,
  GitError,
  GitOutputLimitError,
  GitTimeoutError,
  InvalidGitOptionError,
  InvalidGitProtocolError,
} from './errors.js';
import { LineSplitter, TailBuffer } from './output.js';
import { killGroup, waitGroupGone } from './process-group.js';
import { KNOWN_PROTOCOLS } from './url.js';

/** Default time limit of one git command: 10 minutes. */
export const DEFAULT_GIT_TIMEOUT_MS = 10 * 60 * 1000;
/** Default cap on the stdout collected from one git command: 64 MiB. */
export const DEFAULT_MAX_STDOUT_BYTES = 64 * 1024 * 1024;
const STDERR_TAIL_CHARS = 8 * 1024;
/** setTimeout's ceiling (~24.8 days); longer delays would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface GitRunnerOptions {
  /** Allowed transports (see `parseProtocols`); everything else is refused by git itself. */
  protocols: ReadonlySet<string>;
  /** Time limit of a command when the call gives none (default 10 min). */
  defaultTimeoutMs?: number;
  /** The git executable (default `git`, looked up on PATH). */
  gitBinary?: string;
  /** Largest stdout accepted, in bytes (default 64 MiB). */
  maxStdoutBytes?: number;
  /** Check every received object (`transfer.fsckObjects`); stricter, slower, refuses some old repositories. */
  fsckObjects?: boolean;
}

export interface GitRunOptions {
  /** Working directory (default: the OS temp directory, never the caller's cwd). */
  cwd?: string;
  /** Kills the whole git process group with SIGKILL when it fires. */
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Sent as an `Authorization` header through the environment; never in argv or files. */
  token?: string;
  /** Limits the token header to URLs under this prefix (see `tokenScopeFor`); default: all requests. */
  tokenScope?: string;
  /** Receives stderr line by line (progress meters split on `\r`), redacted. */
  onStderrLine?: (line: string) => void;
  /** Written to stdin, which is otherwise closed. */
  input?: string;
  /** `GIT_INDEX_FILE`: an index of the caller's own, so exports never touch a mirror's files. */
  indexFile?: string;
}

/** A long-lived git process started by {@link GitRunner.start}; the caller stops it. */
export interface GitProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** The last few KiB of its stderr. */
  stderr(): string;
  /** Kills its process group. */
  stop(): void;
}

export interface GitRunResult {
  stdout: string;
  stderr: string;
}

/** Process groups of running git commands, killed if forgesync itself exits. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/**
 * The one hardened way forgesync runs git: an argument vector (never a shell), an
 * environment built from scratch (see `buildGitEnv`), its own process group killed
 * as a whole on abort or timeout, bounded output, redacted errors.
 */
export class GitRunner {
  readonly protocols: ReadonlySet<string>;
  readonly defaultTimeoutMs: number;
  readonly gitBinary: string;
  readonly maxStdoutBytes: number;
  readonly fsckObjects: boolean;

  constructor(options: GitRunnerOptions) {
    for (const protocol of options.protocols) {
      if (!KNOWN_PROTOCOLS.has(protocol)) throw new InvalidGitProtocolError(`unknown git protocol ${JSON.stringify(protocol)}`);
    }
    this.protocols = new Set(options.protocols);
    this.defaultTimeoutMs = positive(options.defaultTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS, 'defaultTimeoutMs');
    this.gitBinary = options.gitBinary ?? 'git';
    this.maxStdoutBytes = positive(options.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES, 'maxStdoutBytes');
    this.fsckObjects = options.fsckObjects ?? false;
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', () => liveGroups.forEach(killGroup));
    }
  }

  /**
   * Runs `git <args>` and resolves with its output.
   * @throws GitCommandError on a non-zero exit; GitTimeoutError; GitAbortedError; GitOutputLimitError.
   */
  async run(args: string[], options: GitRunOptions = {}): Promise<GitRunResult> {
    const { token, signal } = options;
    checkToken(token);
    const redact = makeRedactor(token);
    checkArgs(args, token);
    const command = summarize(args, redact);
    const timeoutMs = positive(options.timeoutMs ?? this.defaultTimeoutMs, 'timeoutMs');
    if (signal?.aborted) throw new GitAbortedError(command, signal.reason);
    const env = this.#env(options);

    return await new Promise<GitRunResult>((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = this.#spawn(args, options.cwd, env, options.input === undefined ? 'ignore' : 'pipe');
      } catch (error) {
        reject(new GitError(`could not start ${this.gitBinary}: ${(error as Error).message}`, { cause: error }));
        return;
      }
      const pid = child.pid;
      if (pid !== undefined) liveGroups.add(pid);
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      const tail = new TailBuffer(STDERR_TAIL_CHARS);
      const onLine = options.onStderrLine;
      const lines = onLine ? new LineSplitter((line) => onLine(redact(line))) : undefined;
      let killedWith: GitError | undefined;
      let settled = false;
      let exited = false;

      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (pid !== undefined) liveGroups.delete(pid);
      };
      const settle = (error: Error | undefined, result?: GitRunResult): void => {
        if (settled) return;
        settled = true;
        cleanup();
        if (error) reject(error);
        else resolve(result as GitRunResult);
      };
      const kill = (error: GitError): void => {
        if (killedWith || settled) return;
        killedWith = error;
        if (pid !== undefined) killGroup(pid);
        child.stdout?.destroy();
        child.stderr?.destroy();
        if (exited) finishKilled();
      };
      const finishKilled = (): void => {
        const error = killedWith as GitError;
        if (pid === undefined) settle(error);
        else void waitGroupGone(pid).then(() => settle(error));
      };
      const onAbort = (): void => kill(new GitAbortedError(command, signal?.reason));
      const timer = setTimeout(() => kill(new GitTimeoutError(command, timeoutMs)), Math.min(timeoutMs, MAX_TIMER_MS));
      signal?.addEventListener('abort', onAbort, { once: true });

      child.stdout?.on('data', (chunk: Buffer) => {
        stdoutBytes += chunk.length;
        if (stdoutBytes > this.maxStdoutBytes) kill(new GitOutputLimitError(command, this.maxStdoutBytes));
        else stdout.push(chunk);
      });
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        tail.push(chunk);
        lines?.push(chunk);
      });
      if (options.input !== undefined && child.stdin) {
        child.stdin.on('error', () => undefined);
        child.stdin.end(options.input);
      }
      child.on('error', (error) => {
        if (pid !== undefined) killGroup(pid);
        settle(new GitError(`could not run ${this.gitBinary}: ${error.message}`, { cause: error }));
      });
      child.on('exit', () => {
        exited = true;
        if (killedWith) finishKilled();
      });
      child.on('close', (code, exitSignal) => {
        if (killedWith) return;
        lines?.end();
        const stderr = redact(tail.toString());
        if (code === 0) settle(undefined, { stdout: Buffer.concat(stdout).toString('utf8'), stderr });
        else settle(new GitCommandError(command, code, stderr, exitSignal));
      });
    });
  }

  /**
   * Starts `git <args>` as a long-lived process (e.g. `cat-file --batch-command`)
   * with the same environment and process-group handling as {@link run}; stdin
   * and stdout are pipes the caller speaks the protocol over.
   */
  start(args: string[], options: Pick<GitRunOptions, 'cwd'> = {}): GitProcess {
    checkArgs(args);
    const child = this.#spawn(args, options.cwd, this.#env({}), 'pipe') as ChildProcessWithoutNullStreams;
    const pid = child.pid;
    if (pid !== undefined) liveGroups.add(pid);
    const tail = new TailBuffer(STDERR_TAIL_CHARS);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => tail.push(chunk));
    child.stdin.on('error', () => undefined);
    child.on('exit', () => {
      if (pid !== undefined) liveGroups.delete(pid);
    });
    return {
      child,
      stderr: () => tail.toString(),
      stop: () => {
        if (pid !== undefined && liveGroups.delete(pid)) killGroup(pid);
      },
    };
  }

  /** git in its own process group (killed as a whole), never through a shell, never in the caller's cwd. */
  #spawn(args: string[], cwd: string | undefined, env: NodeJS.ProcessEnv, stdin: 'ignore' | 'pipe'): ChildProcess {
    return spawn(this.gitBinary, args, { cwd: cwd ?? tmpdir(), env, stdio: [stdin, 'pipe', 'pipe'], detached: true, shell: false, windowsHide: true });
  }

  #env(options: GitRunOptions): NodeJS.ProcessEnv {
    const env = buildGitEnv({ protocols: this.protocols, token: options.token, tokenScope: options.tokenScope, fsckObjects: this.fsckObjects });
    if (options.indexFile !== undefined) {
      if (!isAbsolute(options.indexFile)) throw new InvalidGitOptionError('indexFile must be an absolute path');
      env.GIT_INDEX_FILE = options.indexFile;
    }
    return env;
  }
}

/** Arguments are strings without NUL bytes, and never carry the access token. */
function checkArgs(args: string[], token?: string): void {
  for (const arg of args) {
    if (typeof arg !== 'string' || arg.includes('\0')) throw new InvalidGitOptionError('git arguments must be strings without NUL bytes');
    if (token && arg.includes(token)) throw new InvalidGitOptionError('refusing to pass the access token on the command line');
  }
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new InvalidGitOptionError(`${name} must be a positive number, got ${value}`);
  return value;
}

/** `git <args>` for messages: redacted, each argument shortened, the whole capped. */
function summarize(args: string[], redact: (text: string) => string): string {
  const shown = args.map((arg) => (arg.length > 120 ? `${arg.slice(0, 117)}…` : arg)).join(' ');
  const text = redact(`git ${shown}`);
  return text.length > 400 ? `${text.slice(0, 399)}…` : text;
}
