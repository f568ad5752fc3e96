import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { linkTree } from '../../src/snapshots/link.js';
import { describeTree } from '../support/trees.js';

/** Every entry under `dir` with its inode for files (see describeTree). */
const entries = (dir: string) => describeTree(dir, (_path, stat) => String(stat.ino));

describe('linkTree', () => {
  for (const [shape, width, depth] of [
    ['wide', 40, 1],
    ['one deep chain', 1, 5],
    ['mixed', 3, 4],
  ] as const) {
    it(`hard-links every file and recreates every directory and symlink (${shape})`, () => {
      const root = mkdtempSync(join(tmpdir(), 'forgesync-link-'));
      const src = join(root, 'src');
      const build = (dir: string, level: number): void => {
        mkdirSync(dir);
        writeFileSync(join(dir, '-dash file'), `${dir}\n`);
        writeFileSync(join(dir, 'plain.txt'), 'x\n');
        symlinkSync('plain.txt', join(dir, 'link'));
        if (level < depth) for (let i = 0; i < width; i++) build(join(dir, `d ${i}`), level + 1);
        chmodSync(join(dir, 'plain.txt'), 0o444);
        chmodSync(dir, 0o555);
      };
      build(src, 0);
      const dst = join(root, 'dst');
      return linkTree(src, dst, 3).then(() => {
        // Same names, types, modes and link targets; files are the very same inodes.
        expect(entries(dst)).toEqual(entries(src));
        expect(entries(src).length).toBeGreaterThan(4);
      });
    });
  }
});
