// Child processes of bench/webhooks.mjs: `forgesync serve` and the hello-world
// ceiling, their addresses, and their memory / CPU from /proc.
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const HELLO = fileURLToPath(new URL('./webhooks-hello.mjs', import.meta.url));

/**
 * Starts `forgesync serve --port 0 --host 127.0.0.1` with `env`, its log
 * (stderr, pino JSON) going straight to `logFile`; resolves once the log
 * says where it listens. `nodeArgs` go to node (e.g. --cpu-prof).
 */
export async function startServe(env, logFile, nodeArgs = [], timeoutMs = 30_000) {
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve', '--port', '0', '--host', '127.0.0.1'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'ignore', fd],
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`forgesync serve exited with ${child.exitCode}; see ${logFile}`);
    const line = readFileSync(logFile, 'utf8')
      .split('\n')
      .find((l) => l.includes('"event":"serve"'));
    if (line) return { child, address: JSON.parse(line).address };
    if (Date.now() > deadline) {
      await stop(child);
      throw new Error(`forgesync serve did not start in ${timeoutMs} ms; see ${logFile}`);
    }
    await sleep(50);
  }
}

/** Starts the hello-world Fastify server; resolves with its address. */
export function startHello() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HELLO], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buffer = '';
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline !== -1) resolve({ child, address: JSON.parse(buffer.slice(0, newline)).address });
    });
    child.once('exit', (code) => reject(new Error(`hello server exited with ${code}`)));
  });
}

/** Sends SIGTERM and waits for the exit (SIGKILL after `graceMs`). */
export async function stop(child, graceMs = 10_000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Peak (VmHWM) and current (VmRSS) resident set of a process, bytes, from /proc/<pid>/status. */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { peak: kb('VmHWM'), current: kb('VmRSS') };
  } catch {
    return { peak: NaN, current: NaN };
  }
}

/** User + system CPU time of a process so far, milliseconds, from /proc/<pid>/stat. */
export function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state(0) … utime(11) stime(12), in clock ticks (100/s on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}
