// `forgesync` as separate operating-system processes, for tests of the
// distributed mode: `serve --role …` children whose log (pino JSON on stderr)
// goes to a file the test reads, that can be killed, stopped, continued and
// started again with the same environment; and one-shot CLI commands.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The project's root: three levels up from here, four from the copy compiled into dist-test/ (bench/import.mjs runs that one). */
const ROOT = new URL(/\/dist-test\/test\/support\/cluster\/[^/]+$/.test(import.meta.url) ? '../../../../' : '../../../', import.meta.url);
export const BIN = fileURLToPath(new URL('bin/forgesync.js', ROOT));
const DIST = fileURLToPath(new URL('dist/cli/main.js', ROOT));

/** The processes run the built CLI: say how to get it rather than fail on a missing module. */
export function requireBuilt(): void {
  if (!existsSync(DIST)) throw new Error('dist/ is missing: build first (npm run build), the cluster test runs bin/forgesync.js as separate processes');
}

/** The environment a child gets: only PATH and HOME from ours, so nothing of this machine's FORGESYNC_* leaks in. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...env };
}

/** One `forgesync serve` process (restartable: each start appends to the same log). */
export class ForgesyncProcess {
  child: ChildProcess | undefined;
  /** Where the log of the current run starts in the file. */
  #from = 0;
  starts = 0;

  constructor(
    readonly name: string,
    readonly args: readonly string[],
    readonly env: Record<string, string>,
    readonly logFile: string,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawns it and resolves once its log says it serves (`"event":"serve"`); the api's address when it listens. */
  async start(timeoutMs = 45_000): Promise<string | undefined> {
    this.#from = existsSync(this.logFile) ? statSync(this.logFile).size : 0;
    const fd = openSync(this.logFile, 'a');
    this.child = spawn(process.execPath, [BIN, 'serve', ...this.args], { env: childEnv(this.env), stdio: ['ignore', 'ignore', fd] });
    closeSync(fd);
    this.starts++;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const serve = this.lines(true).find((line) => line.event === 'serve');
      if (serve) return typeof serve.address === 'string' ? serve.address : undefined;
      if (!this.running) throw new Error(`${this.name} exited (${this.child.exitCode ?? this.child.signalCode}) before serving; see ${this.logFile}, which ends: ${this.#tail()}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not serve within ${timeoutMs} ms; see ${this.logFile}`);
      await sleep(50);
    }
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.running) throw new Error(`${this.name} is not running (exit ${this.child?.exitCode ?? this.child?.signalCode}); see ${this.logFile}`);
    this.child!.kill(signal);
  }

  /** SIGKILL, as a crash or the OOM killer would, and waits for the exit. */
  async crash(): Promise<void> {
    const exited = this.#exited();
    this.signal('SIGKILL');
    await exited;
  }

  /** SIGTERM (SIGKILL after `graceMs`), continuing it first in case it is stopped. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    const exited = this.#exited();
    this.child!.kill('SIGCONT');
    this.child!.kill('SIGTERM');
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** The last lines of this run's log, for an error message (the log itself may be gone when it is read). */
  #tail(count = 8): string {
    if (!existsSync(this.logFile)) return '(no log)';
    return readFileSync(this.logFile).subarray(this.#from).toString().trimEnd().split('\n').slice(-count).join('\n');
  }

  #exited(): Promise<void> {
    return new Promise((resolve) => this.child!.once('exit', () => resolve()));
  }

  /** The JSON lines of its log (every run, or with `current` only this one's); other lines are skipped. */
  lines(current = false): Record<string, unknown>[] {
    if (!existsSync(this.logFile)) return [];
    const text = readFileSync(this.logFile).subarray(current ? this.#from : 0).toString();
    const out: Record<string, unknown>[] = [];
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        out.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // A line being written as we read: the next read has it whole.
      }
    }
    return out;
  }

  /** Log lines of every run that signal a crash-worthy problem (fatal, uncaught). */
  fatalLines(): Record<string, unknown>[] {
    return this.lines().filter((line) => Number(line.level) >= 60 || /uncaught|unhandled/i.test(String(line.msg ?? '')));
  }
}

/** Runs one CLI command (`forgesync shard drain c --wait`, `… status --json`) and resolves with its stdout. */
export async function forgesyncCli(args: readonly string[], env: Record<string, string>, timeoutMs = 120_000): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [BIN, ...args], { env: childEnv(env), timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    throw new Error(`forgesync ${args.join(' ')} failed: ${failed.message}\n${failed.stderr ?? ''}`);
  }
}
