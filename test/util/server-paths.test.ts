import { mkdirSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServerPaths } from '../../src/util/server-paths.js';

describe('ServerPaths: the server\'s directories hidden in texts shown over HTTP', () => {
  const paths = new ServerPaths([
    { path: '/srv/forgesync', shownAs: '<dataDir>' },
    { path: '/srv/forgesync/mirrors', shownAs: '<mirrors>' },
    { path: undefined, shownAs: '<unset>' },
  ]);

  it('replaces the longest root first, wherever it appears in a text', () => {
    expect(paths.hide("fatal: '/srv/forgesync/mirrors/1-a-0123.git' does not appear to be a git repository")).toBe(
      "fatal: '<mirrors>/1-a-0123.git' does not appear to be a git repository",
    );
    expect(paths.hide('git --git-dir=/srv/forgesync/mirrors/x.git fetch; known hosts in /srv/forgesync/ssh/known_hosts')).toBe(
      'git --git-dir=<mirrors>/x.git fetch; known hosts in <dataDir>/ssh/known_hosts',
    );
    expect(paths.hide('file:///srv/forgesync/feeds/out')).toBe('file://<dataDir>/feeds/out');
    expect(paths.hide('ENOENT: no such file or directory, open /srv/forgesync')).toBe('ENOENT: no such file or directory, open <dataDir>');
  });

  it('leaves names that merely begin or end like a root alone', () => {
    for (const text of ['/srv/forgesync2/x', '/srv/forgesync-old/x', 'https://git.example.com/srv/forgesync/x.git', '/home/srv/forgesync']) {
      expect(paths.hide(text), text).toBe(text);
    }
  });

  it('keeps null, and hides nothing when no root is usable (the file system root would swallow every path)', () => {
    expect(paths.hide(null)).toBeNull();
    expect(new ServerPaths([{ path: '/', shownAs: '<root>' }]).hide('/etc/passwd')).toBe('/etc/passwd');
    expect(new ServerPaths([]).hide('/srv/forgesync')).toBe('/srv/forgesync');
  });

  it('knows a root also by its real path, through symbolic links, and before its directory exists', () => {
    const real = mkdtempSync(join(tmpdir(), 'forgesync-paths-'));
    mkdirSync(join(real, 'data'));
    const link = join(mkdtempSync(join(tmpdir(), 'forgesync-paths-link-')), 'data-link');
    symlinkSync(join(real, 'data'), link);
    const linked = new ServerPaths([
      { path: link, shownAs: '<dataDir>' },
      { path: join(link, 'mirrors'), shownAs: '<mirrors>' },
    ]);
    const realData = realpathSync(join(real, 'data'));
    expect(linked.hide(`${realData}/mirrors/x.git and ${link}/mirrors/y.git and ${realData}/db`)).toBe('<mirrors>/x.git and <mirrors>/y.git and <dataDir>/db');
  });

  it('takes roots with characters a regular expression would read', () => {
    const odd = new ServerPaths([{ path: '/srv/a+b (c)/[d]', shownAs: '<dataDir>' }]);
    expect(odd.hide('at /srv/a+b (c)/[d]/x')).toBe('at <dataDir>/x');
    expect(odd.hide('at /srv/aab (c)/[d]/x')).toBe('at /srv/aab (c)/[d]/x');
  });
});
