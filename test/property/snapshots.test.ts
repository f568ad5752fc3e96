import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveInside } from '../../src/snapshots/paths.js';
import { parseObjectSpec, validateRevision, validateTreePath } from '../../src/snapshots/revision.js';
import { attempt, check, hostileString, hostileUnit, piece, unknownValue } from './arbitraries.js';

/** Cases per property of this file. */
const REVISION_RUNS = 20_000;
const TREE_PATH_RUNS = 20_000;
const OBJECT_SPEC_RUNS = 20_000;
const RESOLVE_INSIDE_RUNS = 5_000;

const refLike = fc.oneof(
  hostileString({ maxLength: 10, long: 400 }),
  fc.array(fc.oneof(fc.constantFrom('main', 'refs/heads/', 'v1.0', 'feature/x', 'HEAD', 'abc1234', '0'.repeat(40)), piece, hostileUnit), { maxLength: 6 }).map((parts) => parts.join('')),
  fc.stringMatching(/^[0-9a-fA-F]{1,70}$/),
);

const pathLike = fc.oneof(
  hostileString({ maxLength: 10, long: 6000 }),
  fc.array(fc.oneof(fc.constantFrom('src', 'a', 'b.txt', '.', '..', '...', '', '.git', 'x\\..', '..\\x'), piece), { maxLength: 8 }).map((parts) => parts.join('/')),
);

/** What git must never be handed as a revision: options, ranges, `:path`, reflog syntax, ancestry, globs, whitespace. */
function expectSafeRevision(revision: string): void {
  expect(revision.length).toBeGreaterThan(0);
  expect(revision.length).toBeLessThanOrEqual(255);
  expect(revision.startsWith('-'), 'starts with "-"').toBe(false);
  expect(revision).not.toMatch(/\.\.|@\{|[:^~?*[\\]|\/\/|^\/|\/$|\.$|\.lock(\/|$)|(^|\/)\./);
  // eslint-disable-next-line no-control-regex
  expect(revision).not.toMatch(/[\u0000-\u0020\u007f]/);
  expect(revision).not.toBe('@');
}

describe(`validateRevision (${REVISION_RUNS} cases per property)`, () => {
  it('returns the ref unchanged only when git cannot read it as an option, a range, a path or reflog syntax; else refuses naming the ref', () => {
    check(
      fc.property(fc.oneof(refLike, unknownValue), (revision) => {
        const outcome = attempt(() => validateRevision(revision), /ref|branch|tag|sha/i);
        if (!outcome.ok) return;
        expect(outcome.value).toBe(revision);
        expectSafeRevision(outcome.value);
      }),
      REVISION_RUNS,
    );
  });
});

describe(`validateTreePath (${TREE_PATH_RUNS} cases per property)`, () => {
  it('returns a normalised relative path without "." or ".." components, NUL or line breaks; else refuses naming the path', () => {
    check(
      fc.property(fc.oneof(pathLike, unknownValue), (path) => {
        const outcome = attempt(() => validateTreePath(path), /path/i);
        if (!outcome.ok) return;
        const clean = outcome.value;
        expect(clean.length).toBeLessThanOrEqual(4096);
        expect(clean).not.toMatch(/^\/|\/$|\/\//);
        expect(clean).not.toMatch(/[\0\n\r]/);
        for (const part of clean.split('/')) expect(part === '.' || part === '..').toBe(false);
        // Normalising is all it does: the same components, in order.
        expect(clean).toBe((path as string).split('/').filter((part) => part !== '').join('/'));
        expect(validateTreePath(clean)).toBe(clean);
      }),
      TREE_PATH_RUNS,
    );
  });
});

describe(`parseObjectSpec (${OBJECT_SPEC_RUNS} cases per property)`, () => {
  it('splits <ref>:<path> into a safe ref and a clean path, or refuses naming the ref or path', () => {
    const spec = fc.oneof(
      hostileString({ maxLength: 12 }),
      fc.tuple(refLike, fc.constantFrom(':', '::', ''), pathLike).map(([ref, colon, path]) => ref + colon + path),
    );
    check(
      fc.property(spec, (text) => {
        const outcome = attempt(() => parseObjectSpec(text), /ref|path|sha/i);
        if (!outcome.ok) return;
        const { revision, path } = outcome.value;
        expectSafeRevision(revision);
        expect(text.startsWith(`${revision}:`)).toBe(true);
        expect(validateTreePath(path)).toBe(path);
      }),
      OBJECT_SPEC_RUNS,
    );
  });
});

describe(`resolveInside (${RESOLVE_INSIDE_RUNS} cases per property)`, () => {
  let base: string;
  let root: string;

  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'forgesync-prop-resolve-'));
    root = join(base, 'snapshot');
    const outside = join(base, 'outside');
    mkdirSync(join(root, 'src', 'deep'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(root, 'README.md'), 'x');
    writeFileSync(join(root, 'src', 'main.ts'), 'x');
    writeFileSync(join(outside, 'secret'), 'x');
    // Links a commit may carry: inside (relative, absolute), outside (relative, absolute, to a file).
    symlinkSync('src', join(root, 'in-rel'));
    symlinkSync(join(root, 'src', 'deep'), join(root, 'in-abs'));
    symlinkSync('../outside', join(root, 'out-rel'));
    symlinkSync(outside, join(root, 'out-abs'));
    symlinkSync(join(outside, 'secret'), join(root, 'src', 'out-file'));
    symlinkSync('../../..', join(root, 'src', 'deep', 'up'));
    // (Links to nothing and link loops: regressions.test.ts.)
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  const names = ['README.md', 'src', 'main.ts', 'deep', 'in-rel', 'in-abs', 'out-rel', 'out-abs', 'out-file', 'up', 'missing', '.', '..', '', '.git'];
  const snapshotPath = fc.oneof(
    { weight: 4, arbitrary: fc.array(fc.oneof(fc.constantFrom(...names), piece), { maxLength: 6 }).chain((parts) => fc.constantFrom('/', '\\', '//').map((separator) => parts.join(separator))) },
    { weight: 2, arbitrary: fc.array(fc.oneof(fc.constantFrom(...names), hostileUnit), { maxLength: 8 }).map((parts) => parts.join('/')) },
    { weight: 1, arbitrary: hostileString({ maxLength: 10, long: 5000 }) },
  );

  function inside(rootDir: string, path: string): boolean {
    const rel = relative(rootDir, path);
    return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
  }

  it('returns an absolute path inside the snapshot whose existing part resolves inside it, or refuses naming the path', () => {
    check(
      fc.property(snapshotPath, (path) => {
        const outcome = attempt(() => resolveInside(root, path), /path|snapshot/i);
        if (!outcome.ok) return;
        const real = realpathSync(root);
        const resolved = outcome.value;
        expect(isAbsolute(resolved)).toBe(true);
        expect(inside(real, resolved), `${resolved} is outside ${real}`).toBe(true);
        // Whatever part of it exists, followed through every link, is inside too.
        let existing = resolved;
        for (;;) {
          try {
            expect(inside(real, realpathSync(existing)), `${existing} resolves outside`).toBe(true);
            break;
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === undefined) throw error;
            const parent = join(existing, '..');
            if (parent === existing) break;
            existing = parent;
          }
        }
      }),
      RESOLVE_INSIDE_RUNS,
    );
  });

  it('refuses every path through a link that leaves the snapshot', () => {
    const escaping = fc
      .tuple(fc.constantFrom('out-rel', 'out-abs', 'src/out-file', 'src/deep/up', 'in-abs/up', 'in-rel/deep/up'), fc.array(fc.constantFrom('secret', 'x', 'outside', '.', 'src'), { maxLength: 3 }))
      .map(([link, rest]) => [link, ...rest].join('/'));
    check(
      fc.property(escaping, (path) => {
        expect(attempt(() => resolveInside(root, path), /path|snapshot/i).ok, path).toBe(false);
      }),
      RESOLVE_INSIDE_RUNS,
    );
  });

  it('refuses non-strings and NUL with an InvalidInputError', () => {
    // It takes a string; JavaScript callers may pass these (objects whose toString is not a function: regressions.test.ts).
    const notString = fc.constantFrom<unknown>(undefined, null, 0, 1, NaN, true, [], {}, ['a'], [['b']]);
    check(
      fc.property(fc.oneof(notString, fc.tuple(hostileString(), hostileString()).map(([a, b]) => `${a}\0${b}`)), (path) => {
        expect(attempt(() => resolveInside(root, path as string), /path|snapshot/i).ok).toBe(false);
      }),
      RESOLVE_INSIDE_RUNS,
    );
  });
});
