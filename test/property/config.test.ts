import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, SETTINGS } from '../../src/app/config.js';
import { ConfigError } from '../../src/config/errors.js';
import type { ParseContext, Setting } from '../../src/config/setting.js';
import { InvalidInputError } from '../../src/errors.js';
import { check, hostileString, piece } from './arbitraries.js';

/** Cases per property of this file. */
const SETTING_PARSER_RUNS = 20_000;
const LOAD_CONFIG_RUNS = 5_000;

const ALL = Object.entries(SETTINGS) as [string, Setting<unknown>][];
/** Settings whose values are secrets (tokens, webhook secrets); never quoted in a message. */
const SECRET_FIELDS = new Set(ALL.filter(([, setting]) => /(Token|Secret)$/.test(setting.key)).map(([field]) => field));

/** A secret: random, long enough that any 6 characters of it are found only where it was echoed. */
const secret = fc.stringMatching(/^[A-Za-z0-9]{8,40}$/).filter((text) => /[0-9]/.test(text) && /[A-Za-z]/.test(text));

/** Values a setting's parser gets from the environment or a flag (text) or from the config file (any JSON). */
function valueFor(setting: Setting<unknown>, fromFile: boolean): fc.Arbitrary<unknown> {
  const text = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...plausible(setting)) },
    { weight: 3, arbitrary: hostileString({ maxLength: 8, long: 500 }) },
    { weight: 1, arbitrary: fc.array(piece, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('')) },
  );
  if (!fromFile) return text;
  return fc.oneof(
    { weight: 4, arbitrary: text },
    { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null)) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.constantFrom([], [1], ['15s'], {}, { toString: 'x' }, { valueOf: 1 }) },
  );
}

/** Values close to what the operator means: the default, numbers, durations, sizes, URLs, levels. */
function plausible(setting: Setting<unknown>): string[] {
  return [
    ...(typeof setting.default === 'string' ? [setting.default] : []),
    '0', '1', '100', '65535', '65536', '-1', '1.5', '15s', '250ms', '1h30m', '24h', '25h', '400d', '9'.repeat(400), '10GiB', '1.5MB', '0b',
    'sqlite:/tmp/x.db', 'postgres://u@h/db', 'redis://127.0.0.1:6379/1', 'rediss://h', 'mysql://h/db', 'https,ssh', 'https,ext', 'info', 'INFO', 'loud',
    '/srv/forgesync', 'rel/dir', '127.0.0.1', 'a.example,b.example', '', ' ', '\t\n',
  ];
}

/** Parses a value as the loader would, alone: the setting's own verdict (settings parse independently of what was given before). */
function refuses(setting: Setting<unknown>, value: unknown, context: ParseContext): boolean {
  try {
    setting.parse(value, context);
    return false;
  } catch {
    return true;
  }
}

/** Every 6-character window of `secret` that occurs in `text`. */
function echoed(text: string, secrets: Iterable<string>): string[] {
  const found: string[] = [];
  for (const value of secrets) {
    for (let i = 0; i + 6 <= value.length; i++) if (text.includes(value.slice(i, i + 6))) found.push(value.slice(i, i + 6));
  }
  return found;
}

describe(`setting parsers (${SETTING_PARSER_RUNS} cases per property)`, () => {
  it('each parser returns a value of its kind (finite whole numbers, absolute paths, non-blank text) or throws an Error with a message', () => {
    const context: ParseContext = { cwd: '/srv/app', values: {} };
    const settingAndValue = fc.constantFrom(...ALL).chain(([, setting]) => fc.tuple(fc.constant(setting), fc.boolean().chain((fromFile) => valueFor(setting, fromFile))));
    check(
      fc.property(settingAndValue, ([setting, value]) => {
        let parsed: unknown;
        try {
          parsed = setting.parse(value, context);
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
          expect((error as Error).message.length).toBeGreaterThan(0);
          return;
        }
        if (typeof parsed === 'number') {
          expect(Number.isSafeInteger(parsed), `${setting.key} parsed ${String(value).slice(0, 40)} to ${parsed}`).toBe(true);
          expect(parsed).toBeGreaterThanOrEqual(0);
        } else if (typeof parsed === 'string') {
          expect(parsed.trim()).not.toBe('');
        } else if (typeof parsed === 'boolean') {
          expect(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off']).toContain(String(value).trim().toLowerCase());
        } else {
          expect(Array.isArray(parsed), `${setting.key} parsed to ${typeof parsed}`).toBe(true);
        }
      }),
      SETTING_PARSER_RUNS,
    );
  });
});

describe(`loadConfig (${LOAD_CONFIG_RUNS} cases per property)`, () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'forgesync-prop-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Some settings given by environment, file or flag, with hostile or plausible values; secrets drawn apart so they can be looked for. */
  const given = fc
    .subarray(ALL, { maxLength: 8 })
    .chain((chosen) =>
      fc.tuple(
        ...chosen.map(([field, setting]) =>
          fc.constantFrom('env', 'file', 'flag').chain((where) =>
            fc.record({ field: fc.constant(field), where: fc.constant(where), value: SECRET_FIELDS.has(field) ? secret : valueFor(setting, where === 'file') }),
          ),
        ),
      ),
    );
  const fileShape = fc.constantFrom('json', 'none', 'broken', 'unknown-key', 'array', 'unquoted-secret');

  it('returns a configuration, or throws one ConfigError listing every refused setting by key, never quoting a secret', () => {
    let run = 0;
    check(
      fc.property(given, fileShape, hostileString({ maxLength: 6 }), secret, (entries, shape, unknownKey, pasted) => {
        const file = join(dir, `config-${run++}.json`);
        const env: Record<string, string> = { FORGESYNC_CONFIG: file };
        const overrides: Record<string, string> = {};
        const fileValues: Record<string, unknown> = {};
        const secrets: string[] = [];
        for (const { field, where, value } of entries) {
          const setting = SETTINGS[field as keyof typeof SETTINGS] as Setting<unknown>;
          if (SECRET_FIELDS.has(field)) secrets.push(value as string);
          if (where === 'file') fileValues[setting.key] = value;
          else if (where === 'env') env[setting.env] = value as string;
          else overrides[setting.key] = value as string;
        }
        let text = JSON.stringify(fileValues);
        if (shape === 'none') delete env.FORGESYNC_CONFIG;
        if (shape === 'broken') text = text.slice(0, Math.max(1, text.length - 2));
        if (shape === 'array') text = JSON.stringify([fileValues]);
        if (shape === 'unknown-key') text = JSON.stringify({ ...fileValues, [`x${unknownKey}`]: 1 });
        if (shape === 'unquoted-secret') {
          // A hand-edited file: a secret pasted without quotes (or with typographic ones).
          secrets.push(pasted);
          text = `{"adminToken": ${pasted}, "port": 8080}`;
        }
        if (shape !== 'none') writeFileSync(file, text);

        try {
          loadConfig({ env, overrides, cwd: dir });
        } catch (error) {
          expect(error, `${(error as Error).constructor?.name}: ${(error as Error).message}`).toBeInstanceOf(ConfigError);
          expect(error).toBeInstanceOf(InvalidInputError);
          const problems = (error as ConfigError).problems;
          const message = (error as ConfigError).message;
          expect(problems.length).toBeGreaterThan(0);
          expect(echoed(message, secrets), 'secret quoted in the message').toEqual([]);
          // Every given value its setting refuses is among the problems, named by key.
          const context: ParseContext = { cwd: dir, values: {} };
          const fileUsable = shape === 'json' || shape === 'unknown-key';
          // What the file holds, as JSON has it (Infinity and NaN are written as null).
          const written = JSON.parse(JSON.stringify(fileValues)) as Record<string, unknown>;
          for (const [, setting] of ALL) {
            const value = overrides[setting.key] ?? (env[setting.env] !== '' ? env[setting.env] : undefined) ?? (fileUsable ? written[setting.key] : undefined);
            // (null in the file leaves a setting unset, like an empty environment variable.)
            if (value !== undefined && value !== null && refuses(setting, value, context)) {
              expect(problems.some((problem) => problem.startsWith(`${setting.key} (`)), `${setting.key} refused but not reported: ${problems.join(' | ')}`).toBe(true);
            }
          }
          if (shape !== 'json' && shape !== 'none') expect(problems.some((problem) => problem.includes(file))).toBe(true);
          return;
        }
        // Accepted: the file was usable and no given value is refused by its setting.
        expect(shape === 'json' || shape === 'none').toBe(true);
        const context: ParseContext = { cwd: dir, values: {} };
        for (const { field, where, value } of entries) {
          const setting = SETTINGS[field as keyof typeof SETTINGS] as Setting<unknown>;
          const effective = where === 'file' ? (JSON.parse(JSON.stringify({ v: value })) as { v?: unknown }).v : value;
          const shadowed = where === 'file' && shape === 'none';
          if (!shadowed && effective !== undefined && effective !== null && effective !== '') expect(refuses(setting, effective, context), `${setting.key} accepted`).toBe(false);
        }
      }),
      LOAD_CONFIG_RUNS,
    );
  });
});
