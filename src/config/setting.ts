import { isAbsolute, resolve } from 'node:path';
import { durationToMs, formatDuration } from '../util/duration.js';

/** What a parser may look at besides the value: where relative paths start, and the settings parsed before it. */
export interface ParseContext {
  cwd: string;
  /** Values of the settings declared earlier (defaults included), by field. */
  values: Readonly<Record<string, unknown>>;
}

/**
 * One setting, declared once: where it is read from, its default, how its
 * text is parsed and what it is for. The loader, the README's settings table
 * (checked by a test) and `--help` texts all come from these.
 */
export interface Setting<T> {
  /** Key in the JSON config file. */
  readonly key: string;
  /** Environment variable. */
  readonly env: string;
  /**
   * The default, given as text and parsed like any other value; a function
   * when it depends on settings declared earlier. Absent: the setting is unset
   * unless given (its value is undefined).
   */
  readonly default?: string | ((context: ParseContext) => string | undefined);
  /** The default as the README shows it (Markdown); defaults to `default` in backticks when that is text, else "none". */
  readonly defaultDoc?: string;
  readonly doc: string;
  /** Parses a value from the file (any JSON value), the environment or a flag (text); throws a message naming what is wrong. */
  parse(value: unknown, context: ParseContext): T;
}

/** Settings of one module, by the field they fill in the configuration. */
export type SettingGroup = Readonly<Record<string, Setting<unknown>>>;

/** The values a group of settings parses to. */
export type SettingValues<G extends SettingGroup> = {
  -readonly [F in keyof G]: G[F] extends Setting<infer T> ? (G[F] extends { default: unknown } ? T : T | undefined) : never;
};

/** Declares a setting (an identity function that keeps the literal types). */
export function setting<T, const S extends Setting<T>>(declaration: S & Setting<T>): S {
  return declaration;
}

// ---------------------------------------------------------------- parsers

/** `250ms`, `15s`, `1h30m` or plain milliseconds, at least `min` ms. */
export function durationMs(value: unknown, min = 0, max = MAX_DURATION_MS): number {
  const ms = durationToMs(String(value));
  if (ms === null || !Number.isSafeInteger(ms)) throw new Error('must be a duration like 250ms, 15s, 30m or 1h');
  if (ms < min) throw new Error(`must be at least ${formatDuration(min)}`);
  if (ms > max) throw new Error(`must be at most ${formatDuration(max)}`);
  return ms;
}

/** Longest duration any setting takes unless it says less: a year. */
const MAX_DURATION_MS = 365 * 86_400_000;

/** A parser of durations from `min` to `max` ms. */
export const duration =
  (min = 0, max = MAX_DURATION_MS) =>
  (value: unknown): number =>
    durationMs(value, min, max);

/** A parser of `true`/`false` (also yes/no, on/off, 1/0; JSON booleans in the config file). */
export const boolean = (value: unknown): boolean => {
  if (typeof value === 'boolean') return value;
  const word = typeof value === 'string' || typeof value === 'number' ? String(value).trim().toLowerCase() : '';
  if (['true', 'yes', 'on', '1'].includes(word)) return true;
  if (['false', 'no', 'off', '0'].includes(word)) return false;
  throw new Error('must be true or false');
};

/** A parser of integers from `min` to `max`. */
export const integer =
  (min: number, max = Number.MAX_SAFE_INTEGER) =>
  (value: unknown): number => {
    const number = typeof value === 'number' ? value : /^\s*-?\d+\s*$/.test(String(value)) ? Number(value) : Number.NaN;
    if (!Number.isInteger(number)) throw new Error('must be an integer');
    if (number < min) throw new Error(`must be at least ${min}`);
    if (number > max) throw new Error(`must be at most ${max}`);
    return number;
  };

/** A parser of non-empty text, at least `minLength` characters, optionally matching `pattern` (`message` says what it must be). */
export const text =
  (options: { minLength?: number; pattern?: RegExp; message?: string } = {}) =>
  (value: unknown): string => {
    if (typeof value !== 'string' || value.trim() === '') throw new Error('must not be empty');
    const min = options.minLength ?? 1;
    if (value.length < min) throw new Error(`must be at least ${min} characters`);
    if (options.pattern && !options.pattern.test(value)) throw new Error(options.message ?? `must match ${options.pattern}`);
    return value;
  };

/** A parser of paths, made absolute against the working directory. */
export const path = (value: unknown, context: ParseContext): string => {
  const given = text()(value);
  return isAbsolute(given) ? resolve(given) : resolve(context.cwd, given);
};

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** `500MiB`, `20GB`, `1048576` → bytes. */
export function parseSize(value: unknown): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(String(value).trim());
  const unit = SIZE_UNITS[(match?.[2] || 'b').toLowerCase()];
  if (!match || unit === undefined || !Number.isSafeInteger(Math.floor(Number(match[1]) * unit))) throw new Error('must be a size like 500MiB, 20GiB or plain bytes');
  return Math.floor(Number(match[1]) * unit);
}

/** The values of `group`'s settings out of a whole configuration (a module gets its own settings, not everyone's). */
export function pickSettings<G extends SettingGroup>(group: G, config: SettingValues<G>): SettingValues<G> {
  const picked: Record<string, unknown> = {};
  for (const field of Object.keys(group)) picked[field] = (config as Record<string, unknown>)[field];
  return picked as SettingValues<G>;
}
