// Git fixtures for bench/sync.mjs: a fleet of small bare upstreams, plain
// mirrors of them, and a promise pool. Every git command here runs with
// system and global configuration disabled, so the machine's ~/.gitconfig
// cannot change what is measured.
import { execFile } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join } from 'node:path';

/** The environment of every fixture and baseline git command. */
export const PLAIN_GIT_ENV = {
  PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
  HOME: '/nonexistent',
  LANG: 'C',
  LC_ALL: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
};

/** Runs git, resolving with stdout; rejects with stderr in the message. */
export function git(args, { input, cwd } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      args,
      { env: PLAIN_GIT_ENV, cwd, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`git ${args.join(' ')}: ${stderr.trim() || error.message}`));
        else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin.end(input);
  });
}

/** Runs `fn(item, index)` over `items` with at most `parallel` in flight; resolves with the results in order. */
export async function pool(items, parallel, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker));
  return results;
}

const IDENTITY = 'Bench <bench@example.com>';
let clock = 1_700_000_000;

/** A fast-import `data` block. */
const data = (text) => `data ${Buffer.byteLength(text)}\n${text}\n`;

/** One commit in fast-import syntax, with one file, optionally on top of `from`. */
function commitBlock(ref, message, path, content, from) {
  return (
    `commit ${ref}\n` +
    `committer ${IDENTITY} ${clock++} +0000\n` +
    data(message) +
    (from ? `from ${from}\n` : '') +
    `M 100644 inline ${path}\n` +
    data(content)
  );
}

/**
 * The template upstream: `main` with three commits, `dev` with one more,
 * a lightweight tag and an annotated one, HEAD → main.
 */
export async function createTemplate(dir) {
  await git(['init', '--quiet', '--bare', '--initial-branch=main', dir]);
  let stream = '';
  for (let i = 1; i <= 3; i++) {
    // Within one stream fast-import continues a branch it has seen; no `from` needed.
    stream += commitBlock('refs/heads/main', `main ${i}\n`, `file-${i}.txt`, `line ${i}\n`);
  }
  stream += commitBlock('refs/heads/dev', 'dev 1\n', 'dev.txt', 'dev\n', 'refs/heads/main');
  stream += `reset refs/tags/v0.1\nfrom refs/heads/main\n\n`;
  stream += `tag v1.0\nfrom refs/heads/main\ntagger ${IDENTITY} ${clock++} +0000\n${data('release 1.0\n')}`;
  await git([`--git-dir=${dir}`, 'fast-import', '--quiet'], { input: stream });
  return dir;
}

/** Copies the template to `count` upstreams `<root>/up-<i>.git`, each then given a commit of its own. */
export async function createUpstreams(template, root, count, parallel) {
  const paths = Array.from({ length: count }, (_, i) => join(root, `up-${String(i).padStart(4, '0')}.git`));
  for (const path of paths) cpSync(template, path, { recursive: true });
  await pool(paths, parallel, (path, i) => addCommit(path, `unique ${i}`));
  return paths;
}

/** Adds one commit on `main` of a bare upstream (one fast-import process). */
export function addCommit(upstream, label) {
  const name = label.replace(/[^A-Za-z0-9]+/g, '-');
  const stream = commitBlock('refs/heads/main', `${label}\n`, `changes/${name}.txt`, `${label}\n`, 'refs/heads/main^0');
  return git([`--git-dir=${upstream}`, 'fast-import', '--quiet'], { input: stream });
}

/** `git clone --mirror` of `url` into `path`, the way forgesync clones (no hardlinks, no template). */
export function cloneMirror(url, path) {
  return git(['clone', '--mirror', '--no-local', '--template=', '--quiet', '--end-of-options', url, path]);
}

/** Every ref of a repository as sorted `sha ref` lines. */
export async function refLines(gitDir) {
  const out = await git([`--git-dir=${gitDir}`, 'for-each-ref', '--format=%(objectname) %(refname)']);
  return out.split('\n').filter(Boolean).sort().join('\n');
}
