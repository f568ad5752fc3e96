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
