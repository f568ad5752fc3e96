import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { tmpdir } from 'node:os';
import { GitAbortedError, GitCommandError, GitError, GitOutputLimitError, GitTimeoutError } from './errors.js';
import { LineSplitter, TailBuffer } from './output.js';
import { killGroup, waitGroupGone } from './process-group.js';

const STDERR_TAIL_CHARS = 8 * 1024;
/** setTimeout's ceiling (~24.8 days); longer delays would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A long-lived git process started by {@link startGitProcess}; the caller stops it. */
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

/** One git process to run to its end (the runner has checked the arguments and built the environment). */
export interface GitProcessRequest {
  binary: string;
  args: string[];
  cwd: string | undefined;
  env: NodeJS.ProcessEnv;
  /** `git …` as messages show it (redacted). */
  command: string;
  /** Applied to stderr before anyone sees it. */
  redact: (text: string) => string;
  timeoutMs: number;
  maxStdoutBytes: number;
  signal?: AbortSignal;
  input?: string;
  onStderrLine?: (line: string) => void;
}

/** Process groups of running git commands, killed if forgesync itself exits. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Makes sure the process groups still running are killed when forgesync exits. */
export function killGitOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => liveGroups.forEach(killGroup));
}

/** git in its own process group (killed as a whole), never through a shell, never in the caller's cwd. */
function spawnGit(binary: string, args: string[], cwd: string | undefined, env: NodeJS.ProcessEnv, stdin: 'ignore' | 'pipe'): ChildProcess {
  return spawn(binary, args, { cwd: cwd ?? tmpdir(), env, stdio: [stdin, 'pipe', 'pipe'], detached: true, shell: false, windowsHide: true });
}

/**
 * Runs one git process and resolves with its output: on abort or timeout
 * its whole process group is killed (and waited for), stdout is capped,
 * stderr kept as a redacted tail.
 * @throws GitCommandError on a non-zero exit; GitTimeoutError; GitAbortedError; GitOutputLimitError.
 */
export function runGitProcess(request: GitProcessRequest): Promise<GitRunResult> {
  const { command, signal, timeoutMs } = request;
  return new Promise<GitRunResult>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawnGit(request.binary, request.args, request.cwd, request.env, request.input === undefined ? 'ignore' : 'pipe');
    } catch (error) {
      reject(new GitError(`could not start ${request.binary}: ${(error as Error).message}`, { cause: error }));
      return;
    }
    const pid = child.pid;
    if (pid !== undefined) liveGroups.add(pid);
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

    const output = collectOutput(child, request, kill);
    child.on('error', (error) => {
      if (pid !== undefined) killGroup(pid);
      settle(new GitError(`could not run ${request.binary}: ${error.message}`, { cause: error }));
    });
    child.on('exit', () => {
      exited = true;
      if (killedWith) finishKilled();
    });
    child.on('close', (code, exitSignal) => {
      if (killedWith) return;
      const stderr = output.endStderr();
      if (code === 0) settle(undefined, { stdout: output.stdout(), stderr });
      else settle(new GitCommandError(command, code, stderr, exitSignal));
    });
  });
}

/** A running git's output as {@link collectOutput} gathers it. */
interface CollectedOutput {
  /** Ends stderr's line splitting and gives its redacted tail. */
  endStderr(): string;
  stdout(): string;
}

/**
 * Gathers a running git's output (stdout up to its cap: past it, `kill` with
 * GitOutputLimitError; stderr as redacted lines and a tail) and writes its input.
 */
function collectOutput(child: ChildProcess, request: GitProcessRequest, kill: (error: GitError) => void): CollectedOutput {
  const { command, redact } = request;
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  const tail = new TailBuffer(STDERR_TAIL_CHARS);
  const onLine = request.onStderrLine;
  const lines = onLine ? new LineSplitter((line) => onLine(redact(line))) : undefined;
  child.stdout?.on('data', (chunk: Buffer) => {
    stdoutBytes += chunk.length;
    if (stdoutBytes > request.maxStdoutBytes) kill(new GitOutputLimitError(command, request.maxStdoutBytes));
    else stdout.push(chunk);
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    tail.push(chunk);
    lines?.push(chunk);
  });
  if (request.input !== undefined && child.stdin) {
    child.stdin.on('error', () => undefined);
    child.stdin.end(request.input);
  }
  return {
    endStderr: () => {
      lines?.end();
      return redact(tail.toString());
    },
    stdout: () => Buffer.concat(stdout).toString('utf8'),
  };
}

/** One long-lived git process to start (the runner has checked the arguments and built the environment). */
export interface GitStartRequest {
  binary: string;
  args: string[];
  cwd: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Stopped after this long, if it has not ended (default: when its caller stops it). */
  timeoutMs?: number;
}

/**
 * Starts a long-lived git process (e.g. `cat-file --batch-command`) in its
 * own process group; stdin and stdout are pipes the caller speaks the
 * protocol over.
 */
export function startGitProcess(request: GitStartRequest): GitProcess {
  const { binary, args, cwd, env } = request;
  const child = spawnGit(binary, args, cwd, env, 'pipe') as ChildProcessWithoutNullStreams;
  const pid = child.pid;
  if (pid !== undefined) liveGroups.add(pid);
  const tail = new TailBuffer(STDERR_TAIL_CHARS);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => tail.push(chunk));
  child.stdin.on('error', () => undefined);
  const stop = () => {
    if (pid !== undefined && liveGroups.delete(pid)) killGroup(pid);
  };
  const timer = request.timeoutMs === undefined ? undefined : setTimeout(stop, Math.min(request.timeoutMs, MAX_TIMER_MS));
  timer?.unref();
  child.on('exit', () => {
    clearTimeout(timer);
    if (pid !== undefined) liveGroups.delete(pid);
  });
  return { child, stderr: () => tail.toString(), stop };
}
