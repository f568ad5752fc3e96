import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PathEscapeError } from '../../src/git/errors.js';
import { mirrorDirName, safeJoin, sanitizeName } from '../../src/git/paths.js';

describe('sanitizeName', () => {
  it.each([
    ['my-repo', 'my-repo'],
    ['Owner/Repo.js', 'Owner-Repo.js'],
    ['../../etc/passwd', 'etc-passwd'],
    ['..', 'repo'],
    ['', 'repo'],
    ['.hidden', 'hidden'],
    ['-rf', 'rf'],
    ['a   b///c', 'a-b-c'],
    ['naïve ☃ name', 'na-ve-name'],
    ['nul\u0000byte', 'nul-byte'],
  ])('%j → %j', (input, output) => {
    expect(sanitizeName(input)).toBe(output);
  });

  it('caps the length at 100', () => {
    expect(sanitizeName('x'.repeat(500))).toHaveLength(100);
  });
});

describe('mirrorDirName', () => {
  it('is <id>-<name>-<sha256(url)[:12]>.git', () => {
    const url = 'https://github.com/o/r.git';
    const digest = createHash('sha256').update(url).digest('hex').slice(0, 12);
    expect(mirrorDirName({ id: 7, name: 'o/r' }, url)).toBe(`7-o-r-${digest}.git`);
  });

  it('differs by URL and by source, even for names that sanitize alike, and never starts with a dot', () => {
    expect(mirrorDirName({ id: 1, name: 'r' }, 'https://a/x')).not.toBe(mirrorDirName({ id: 1, name: 'r' }, 'https://b/x'));
    expect(mirrorDirName({ id: 1, name: 'coll' }, 'u')).not.toBe(mirrorDirName({ id: 2, name: 'coll.' }, 'u'));
    expect(mirrorDirName({ id: 1, name: 'repo' }, 'u')).not.toBe(mirrorDirName({ id: 2, name: 'repo-' }, 'u'));
    expect(mirrorDirName({ id: 1, name: '.tmp-x' }, 'u').startsWith('.')).toBe(false);
  });
});

describe('safeJoin', () => {
  it('joins inside the root', () => {
    expect(safeJoin('/srv/mirrors', 'a.git')).toBe('/srv/mirrors/a.git');
    expect(safeJoin('/srv/mirrors/', 'a', '..', 'b')).toBe('/srv/mirrors/b');
  });

  it.each([
    [['..']],
    [['../other']],
    [['a/../../other']],
    [['/etc/passwd']],
    [['']],
    [['.']],
    [['a\u0000b']],
  ])('refuses %j', (parts) => {
    expect(() => safeJoin('/srv/mirrors', ...parts)).toThrow(PathEscapeError);
  });

  it('refuses a sibling that shares the prefix', () => {
    expect(() => safeJoin('/srv/mirrors', '../mirrors-evil/x')).toThrow(/not strictly inside/);
  });
});
