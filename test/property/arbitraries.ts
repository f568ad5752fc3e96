import fc from 'fast-check';
import { expect } from 'vitest';
import { InvalidInputError } from '../../src/errors.js';

/*
 * Shared generators and checks of the property tests (test/property/*.test.ts).
 *
 * Seeds: every fc.assert of a run uses one seed, FC_SEED when set, else a
 * random one. fast-check prints it (with the shrunk counterexample and its
 * path) when a property fails; `FC_SEED=<seed> npx vitest run test/property`
 * replays the same cases.
 */
export const SEED = process.env.FC_SEED !== undefined && process.env.FC_SEED !== '' ? Number(process.env.FC_SEED) : (Math.random() * 2 ** 31) | 0;
fc.configureGlobal({ seed: SEED });

/** Shorthand: `fc.assert` with `numRuns` (each suite states its count as a constant). */
export function check<T>(property: fc.IProperty<T>, numRuns: number): void {
  fc.assert(property, { numRuns });
}

/** Async properties (HTTP requests, file system). */
export async function checkAsync<T>(property: fc.IAsyncProperty<T>, numRuns: number): Promise<void> {
  await fc.assert(property, { numRuns });
}

// ---------------------------------------------------------------- strings

/** A lone UTF-16 surrogate (invalid on its own; UTF-8 encoders turn it into U+FFFD). */
export const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
/** C0 and C1 controls, DEL, NUL. */
export const controlChar = fc.oneof(
  fc.integer({ min: 0, max: 0x1f }).map((code) => String.fromCharCode(code)),
  fc.constantFrom('\u007f', '\u0080', '\u0085', '\u009b', '\u009f'),
);
/** Whitespace, separators and invisible or direction-changing format characters. */
export const oddSpace = fc.constantFrom(' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '\u1680', '\u2000', '\u2003', '\u200b', '\u200d', '\u2028', '\u2029', '\u202e', '\u205f', '\u3000', '\ufeff');

/** The pieces attacks on names, refs, paths and URLs are built from. */
export const PIECES = [
  '-', '--', '-o', '-oProxyCommand=touch /tmp/x', '--upload-pack=x', '.', '..', '...', '/', '//', '\\', '\\\\', './', '../', '..\\',
  '%2D', '%2d', '%2e', '%2E', '%2e%2e', '%2f', '%2F', '%5c', '%00', '%0a', '%0d', '%20', '%40', '%3a', '%', '%%', '%zz',
  '::', 'ext::', 'fd::', 'ext::sh -c touch% /tmp/x', 'ssh::', 'transport::',
  '@', '@{', '@{-1}', '@{u}', ':', '::1', '[', ']', '[::1]', '?', '#', '&', '=', '+', '*', '~', '^', '^{tree}', '~1',
  '"', "'", '`', '$', '$(id)', ';', '|', '<', '>', '{', '}', ',', '!',
  ' ', '  ', '\t', '\n', '\r\n', '\0', '\u0085', '\u00a0', '\u2028', '\ufeff', '\u202e', '\u200b',
  '.lock', '.git', '.git/', 'HEAD', 'refs/heads/', 'refs/tags/', 'main', 'master',
  'https://', 'http://', 'ssh://', 'git://', 'file://', 'git+ssh://', 'ssh+git://', 'ftp://', 'javascript:', 'data:',
  'git@', 'user@', 'user:pass@', ':secret@', 'github.com', 'GitHub.COM', 'localhost', '127.0.0.1', '0x7f.1', '[::1]',
  ':22', ':443', ':0', ':65536', ':-1',
  'ghp_', 'github_pat_', 'glpat-', 'env:', 'file:', 'env:GITHUB_TOKEN', 'file:/etc/passwd',
  '/etc/passwd', 'C:\\', 'NUL', 'CON', 'a', 'Z', 'z', '0', '9', '_', 'é', 'É', 'ß', 'İ', 'ﬀ', 'K', '😀', '\u{10ffff}',
  'redis://', 'rediss://', 'prefix=', '?prefix=', 'sqlite:', 'postgres://', 'ms', 's', 'm', 'h', 'd', '1', '30', '1h', '999999999999999999999',
];
export const piece = fc.constantFrom(...PIECES);

/** One unit of a hostile string: any code point, a lone surrogate, a control, odd whitespace or a dangerous piece. */
export const hostileUnit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: controlChar },
  { weight: 2, arbitrary: oddSpace },
  { weight: 6, arbitrary: piece },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 3 }) },
);

/** Hostile text: mostly short, built from hostile units; sometimes very long. */
export function hostileString(options: { maxLength?: number; long?: number } = {}): fc.Arbitrary<string> {
  const maxLength = options.maxLength ?? 16;
  const long = options.long ?? 5000;
  return fc.oneof(
    { weight: 10, arbitrary: fc.array(hostileUnit, { maxLength }).map((units) => units.join('')) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: hostileUnit, minLength: Math.floor(long / 10), maxLength: long }) },
    { weight: 1, arbitrary: fc.tuple(piece, fc.integer({ min: 1, max: long })).map(([p, n]) => p.repeat(Math.ceil(n / p.length)).slice(0, n)) },
  );
}

/** Objects built by JSON.parse with `keys`: e.g. `toString`/`valueOf` that are not functions, `__proto__` as an own key. */
function objectWith(keys: string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .array(fc.tuple(fc.constantFrom(...keys), fc.jsonValue({ maxDepth: 1 })), { minLength: 1, maxLength: 3 })
    .map((entries) => JSON.parse(`{${entries.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`).join(',')}}`) as Record<string, unknown>);
}
const HARMLESS_KEYS = ['__proto__', 'constructor', 'length', 'then', 'kind', 'key', 'url'];
/** Objects whose keys break naive code, `toString`/`valueOf` that are not functions among them (String() of such an object throws a TypeError). */
export const trickyObject = objectWith([...HARMLESS_KEYS, 'toString', 'valueOf']);

function unknownOf(objects: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 4, arbitrary: hostileString() },
    { weight: 1, arbitrary: fc.constantFrom(undefined, null, true, false, 0, -0, 1, -1, NaN, Infinity, -Infinity, 1.5, 2 ** 53, 2 ** 64, '', '0', ' 1', '1e3', '0x10') },
    { weight: 1, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.double() },
    { weight: 1, arbitrary: fc.bigInt() },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }) },
    { weight: 1, arbitrary: objects },
  );
}

/** Any value a JSON body, a config file or a careless library caller could hand to a parser that takes `unknown`. */
export const unknownValue: fc.Arbitrary<unknown> = unknownOf(trickyObject);
// ---------------------------------------------------------------- checks

/**
 * The refusal contract: an InvalidInputError (so the API answers 400 and the
 * CLI prints it), never a TypeError, RangeError or anything else, with a
 * message that names the field or the value's role (`role`).
 */
export function expectRefusal(error: unknown, role: RegExp): void {
  if (!(error instanceof InvalidInputError)) {
    throw new Error(`expected an InvalidInputError, got ${describeError(error)}`);
  }
  expect(error.message).toMatch(role);
}

/** Runs `parse`; on a throw, checks the refusal contract and returns undefined; else returns the value. */
export function attempt<T>(parse: () => T, role: RegExp): { ok: true; value: T } | { ok: false; error: InvalidInputError } {
  try {
    return { ok: true, value: parse() };
  } catch (error) {
    expectRefusal(error, role);
    return { ok: false, error: error as InvalidInputError };
  }
}

export async function attemptAsync<T>(parse: () => Promise<T>, role: RegExp): Promise<{ ok: true; value: T } | { ok: false; error: InvalidInputError }> {
  try {
    return { ok: true, value: await parse() };
  } catch (error) {
    expectRefusal(error, role);
    return { ok: false, error: error as InvalidInputError };
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.constructor.name}: ${error.message.slice(0, 200)}`;
  return `a thrown ${typeof error}: ${String(error).slice(0, 200)}`;
}

/** Every C0/C1 control, DEL, and line/paragraph separators. */
// eslint-disable-next-line no-control-regex
export const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
