// Processes of bench/serve.mjs as /proc shows them: the CPU of a serving
// process tree, and its resident memory sampled while clones stream.
import { readdirSync, readFileSync } from 'node:fs';

// USER_HZ: 100 on every Linux architecture Node runs on.
const TICK_MS = 1000 / 100;

/** The fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], utime [11] …). */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU milliseconds of `pid` and of every child it has reaped so far
 * (utime + stime + cutime + cstime): a serving process's upload-packs, their
 * pack-objects and hooks, and the cache's pack-objects are added as they
 * exit. Read it once no child of the measured work is still running.
 */
export function cpuTreeMs(pid) {
  const f = statFields(pid);
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS;
}

/** Resident set of one process in bytes (VmRSS), NaN when it is gone. */
export function rssOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
  } catch {
    return NaN;
  }
}

/** The pids of `pid`'s descendants (from /proc/<pid>/task/*\/children, recursively). */
export function descendantsOf(pid) {
  const out = [];
  const walk = (parent) => {
    let tasks;
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${parent}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children.split(' ').filter(Boolean)) {
        out.push(Number(child));
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

/**
 * Samples every `everyMs` the resident set of `pid` itself and of its whole
 * tree (itself plus the git processes it runs) until `stop()`, which returns
 * the peaks and the sample count.
 */
export function sampleRss(pid, everyMs = 50) {
  let peakSelf = 0;
  let peakTree = 0;
  let samples = 0;
  const sample = () => {
    const self = rssOf(pid);
    if (Number.isNaN(self)) return;
    let tree = self;
    for (const child of descendantsOf(pid)) tree += rssOf(child) || 0;
    peakSelf = Math.max(peakSelf, self);
    peakTree = Math.max(peakTree, tree);
    samples++;
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakSelf, peakTree, samples };
    },
  };
}

/** Waits until `pid` has no child left (its upload-packs reaped, so their CPU is in cutime), at most `timeoutMs`. */
export async function childrenReaped(pid, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (descendantsOf(pid).length > 0) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still has children ${descendantsOf(pid).join(', ')} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
