import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

/** BENCH_QUICK=1 (or true): every bench's short smoke-test configuration. */
export const quick = process.env.BENCH_QUICK === '1' || process.env.BENCH_QUICK === 'true';

/** Marks an error as "the backend is not there", which skips the backend instead of failing it. */
export function unreachable(cause) {
  const reason = describeError(cause);
  return Object.assign(new Error(reason, { cause }), { unreachable: true });
}

/** A one-line reason: the message, or the codes of an AggregateError (ECONNREFUSED on ::1 and 127.0.0.1). */
export function describeError(error) {
  if (!error) return 'unknown error';
  if (error instanceof AggregateError && error.errors?.length) {
    return [...new Set(error.errors.map((e) => e.code ?? e.message))].join(', ');
  }
  return error.message || error.code || String(error);
}

/** The URL with any password replaced by ***. */
export function redactUrl(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** An integer BENCH_* setting from the environment; exits 2 with a clear message when malformed. */
export function intSetting(name, fallback, min, env = process.env) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    console.error(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

/** A plain-text table: first column left-aligned, the others right-aligned. */
export function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** A line of the report on stdout. */
export const log = (line = '') => console.log(line);

/** A transient status line on a terminal's stderr (nothing when stderr is not a terminal). */
export const progress = process.stderr.isTTY ? (text) => process.stderr.write(`\r\x1b[K${text}`) : () => {};

/** Bytes → MiB. */
export const mib = (bytes) => bytes / (1024 * 1024);

/** Load averages as printed in the reports. */
export const loads = (values) => values.map((n) => n.toFixed(2)).join(' ');

/**
 * Logs the load average at the end, with a warning when it (at the start, at
 * the end or in `sampled`, one-minute loads taken during the run) exceeded
 * the CPU count. Returns the end's load averages.
 */
export function reportLoad(loadAtStart, sampled, hint = '') {
  const loadAtEnd = os.loadavg();
  const busiest = Math.max(loadAtStart[0], loadAtEnd[0], ...sampled);
  if (busiest > os.cpus().length) {
    log(`warning: load average reached ${busiest.toFixed(2)} on ${os.cpus().length} CPUs: something else competed for the CPU, wall times are noisy${hint}`);
  }
  log(`load average at end: ${loads(loadAtEnd)}`);
  return loadAtEnd;
}

/**
 * Writes `bench/results/<name>.json` (the directory ignores itself, so results
 * never show up as untracked files) and returns its path.
 */
export function writeResults(name, result) {
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}.gitignore`, '*\n');
  const file = `${dir}${name}.json`;
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

/** CPU seconds (user + system) a live process has used, from /proc (null where there is none). */
export function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime (fields 14 and 15 of stat, 12 and 13 after the command) in clock ticks, 100 a second on Linux.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}
