// Measurement and file-system helpers of bench/snapshots.mjs.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { PLAIN_GIT_ENV } from './git-fleet.mjs';

// USER_HZ: 100 on every Linux architecture Node runs on.
const CLOCK_TICKS = 100;

/** CPU time used so far by this process and by the children it waited for, in ms; undefined off Linux. */
export function cpuNow() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const tick = 1000 / CLOCK_TICKS;
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * tick;
  } catch {
    return undefined;
  }
}

/**
 * Runs `fn`, resolving with its wall time, the CPU time it cost (this process
 * plus the children it waited for; 10 ms resolution, so only meaningful for
 * runs of a few hundred ms and more) and its value.
 */
export async function measured(fn) {
  const cpu0 = cpuNow();
  const t0 = performance.now();
  const value = await fn();
  const ms = performance.now() - t0;
  const cpu1 = cpuNow();
  return { ms, cpuMs: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined, value };
}

/** Nearest-rank percentile `p` (0–100) of `values`. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Runs git with the clean environment (plus `env`), resolving with stdout; rejects with stderr in the message. */
export function gitRaw(args, { cwd, env } = {}) {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { env: { ...PLAIN_GIT_ENV, ...env }, cwd, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`git ${args.join(' ')}: ${stderr.trim() || error.message}`));
        else resolve(stdout);
      },
    );
  });
}

/** Runs a program, resolving when it exits 0. */
export function runProgram(file, args) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${String(stderr).trim() || error.message}`));
      else resolve();
    });
  });
}

/** Deletes a directory tree even when read-only inside (snapshots are); missing is fine. */
export async function forceRemove(path) {
  try {
    await runProgram('chmod', ['-R', 'u+w', '--', path]);
  } catch {
    // missing
  }
  rmSync(path, { recursive: true, force: true });
}

/** The same, synchronously (for the exit handler). */
export function forceRemoveSync(path) {
  try {
    execFileSync('chmod', ['-R', 'u+w', '--', path], { stdio: 'ignore' });
  } catch {
    // missing
  }
  rmSync(path, { recursive: true, force: true });
}

/** Filesystem type and mount point holding `path`, from /proc/mounts (Linux); undefined elsewhere. */
export function filesystemOf(path) {
  try {
    let best;
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, mountPoint, type] = line.split(' ');
      if (!mountPoint) continue;
      const prefix = mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`;
      if ((path === mountPoint || path.startsWith(prefix)) && (!best || mountPoint.length >= best.mountPoint.length)) best = { mountPoint, type };
    }
    return best;
  } catch {
    return undefined;
  }
}

/** Counts regular files and symlinks under `dir`, skipping `skip` (a top-level name such as `.git`). */
export async function countFiles(dir, skip) {
  let count = 0;
  const walk = async (path, top) => {
    for (const entry of await readdir(path, { withFileTypes: true })) {
      if (top && entry.name === skip) continue;
      if (entry.isDirectory()) await walk(`${path}/${entry.name}`, false);
      else count++;
    }
  };
  await walk(dir, true);
  return count;
}

/**
 * Wraps `runner.run` (forgesync's GitRunner) to record the wall time of each
 * git command run while `recorder.active`: { command, ms } with the
 * subcommand name. Instrumentation only: arguments and results pass through.
 */
export function recordGitCommands(runner) {
  const recorder = { active: false, commands: [] };
  const original = runner.run.bind(runner);
  runner.run = async (args, options) => {
    if (!recorder.active) return await original(args, options);
    const t0 = performance.now();
    try {
      return await original(args, options);
    } finally {
      recorder.commands.push({ command: subcommand(args), ms: performance.now() - t0 });
    }
  };
  return recorder;
}

function subcommand(args) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c' || args[i] === '-C') {
      i++;
      continue;
    }
    if (!args[i].startsWith('-')) return args[i];
  }
  return '?';
}
