// Preloaded into the serve child of bench/lib/import-freshness.mjs with
// BENCH_CPU_PROF=<dir> (node refuses --cpu-prof in NODE_OPTIONS, --import it
// allows): a V8 CPU profile of the main thread from start to exit, and the
// event loop's delay (how long ready work waited: a synchronous call that
// blocks, such as SQLite's busy wait, shows there while the CPU idles), and
// the time the main thread spent in each SQL text on better-sqlite3 (the
// profile shows only the driver's frame: its callers are behind an await).
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const dir = process.env.BENCH_CPU_PROF;
mkdirSync(dir, { recursive: true });
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 500 });
session.post('Profiler.start');
const statements = new Map();
const Database = createRequire(fileURLToPath(new URL('../../package.json', import.meta.url)))('better-sqlite3');
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('select 1'));
probe.close();
for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = Statement[method];
  Statement[method] = function timed(...args) {
    const started = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const key = this.source.replace(/\s+/g, ' ').slice(0, 160);
      const entry = statements.get(key) ?? { calls: 0, ms: 0 };
      entry.calls++;
      entry.ms += performance.now() - started;
      statements.set(key, entry);
    }
  };
}
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
// The bench asks for the delay of one phase: SIGUSR2 writes it and starts a fresh histogram.
let phase = 0;
process.on('SIGUSR2', () => {
  const ms = (ns) => Math.round(ns / 1e5) / 10;
  const sql = [...statements].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25).map(([text, { calls, ms: spent }]) => ({ ms: Math.round(spent), calls, text }));
  writeFileSync(join(dir, `loop-delay-${++phase}.json`), JSON.stringify({ p50Ms: ms(delay.percentile(50)), p99Ms: ms(delay.percentile(99)), maxMs: ms(delay.max), meanMs: ms(delay.mean), sql }, null, 1));
  delay.reset();
  statements.clear();
});
process.on('exit', () => {
  session.post('Profiler.stop', (error, result) => {
    if (!error) writeFileSync(join(dir, `serve-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
  });
});
