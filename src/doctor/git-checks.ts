import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { advertisement } from '../cloning/upload-pack.js';
import { FULL_REPACK_ARGS } from '../git/housekeeping.js';
import { GitRunner } from '../git/runner.js';
import { fail, messageOf, ok, type CheckContext, type CheckGroup, type CheckResult } from './types.js';

/** A git feature forgesync uses, the release that brought it, and what uses it. */
interface GitFeature {
  since: [major: number, minor: number];
  feature: string;
  usedFor: string;
}

/** What src/git, src/cloning and src/lfs run, by the git release each needs; the newest one is the minimum. */
const GIT_FEATURES: readonly GitFeature[] = [
  { since: [2, 37], feature: 'repack --cruft', usedFor: 'housekeeping (unreachable objects kept in a cruft pack until the prune grace ends)' },
  { since: [2, 36], feature: 'cat-file --batch-command', usedFor: 'reading mirrors (snapshots, contents, LFS scans)' },
  { since: [2, 34], feature: 'repack --write-midx', usedFor: 'housekeeping (multi-pack index and bitmaps)' },
  { since: [2, 32], feature: 'repack --geometric', usedFor: 'housekeeping (cheap incremental repacks)' },
  { since: [2, 31], feature: 'fetch --atomic', usedFor: 'syncs (all refs of a fetch updated or none)' },
  { since: [2, 29], feature: 'fetch --no-write-fetch-head, --no-auto-maintenance', usedFor: 'syncs' },
  { since: [2, 18], feature: 'protocol v2 (upload-pack)', usedFor: 'serving clones and partial clones' },
];

/** The oldest git with every feature above. */
const MINIMUM_GIT = GIT_FEATURES.reduce((newest, { since }) => (compare(since, newest) > 0 ? since : newest), [0, 0] as [number, number]);

/**
 * git's version against what forgesync uses, then the features tried for
 * real in a throwaway repository (a distribution's git may lack a build
 * option, or `git` on PATH may not be the one `git --version` in a shell shows).
 */
export const gitChecks: CheckGroup = {
  name: 'git',
  async run({ protocols, timeoutMs, signal }: CheckContext): Promise<CheckResult[]> {
    const runner = new GitRunner({ protocols, defaultTimeoutMs: timeoutMs });
    let version: string;
    try {
      version = (await runner.run(['version'], { signal })).stdout.trim().replace(/^git version /, '');
    } catch (error) {
      return [fail('git', `git cannot be run: ${messageOf(error)}`, `install git ${MINIMUM_GIT.join('.')} or later and put it on PATH`)];
    }
    const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
    const missing = GIT_FEATURES.filter(({ since }) => compare([major, minor], since) < 0);
    const versionCheck =
      missing.length === 0
        ? ok('git', `git ${version} (at least ${MINIMUM_GIT.join('.')} needed)`)
        : fail('git', `git ${version} lacks ${missing.map((gap) => `${gap.feature} (${gap.since.join('.')}, for ${gap.usedFor})`).join('; ')}`, `install git ${MINIMUM_GIT.join('.')} or later`);
    return [versionCheck, await featureProbes(runner, signal)];
  },
};

/** Runs the features in a new bare repository: cat-file --batch-command, a cruft repack with a midx and bitmaps, a protocol v2 advertisement with filters. */
async function featureProbes(runner: GitRunner, signal: AbortSignal): Promise<CheckResult> {
  const dir = await mkdtemp(join(tmpdir(), 'forgesync-doctor-'));
  const repo = join(dir, 'probe.git');
  try {
    await runner.run(['init', '--bare', '--quiet', repo], { signal });
    await runner.run([`--git-dir=${repo}`, 'cat-file', '--batch-command'], { input: '', signal });
    await runner.run([`--git-dir=${repo}`, ...FULL_REPACK_ARGS], { signal });
    const advertised = await v2Advertisement(runner, repo, signal);
    if (!/version 2/.test(advertised)) throw new Error('upload-pack does not speak protocol version 2');
    if (!/fetch=[^\n]*\bfilter\b/.test(advertised)) throw new Error('upload-pack does not offer filters (partial clone)');
    return ok('git:features', 'cat-file --batch-command, cruft repack with midx and bitmaps, protocol v2 with partial clone: all work');
  } catch (error) {
    return fail('git:features', `a git feature forgesync uses does not work: ${messageOf(error)}`, `install git ${MINIMUM_GIT.join('.')} or later, built with its defaults`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What upload-pack advertises to a protocol v2 client: the very call `GET …/info/refs` makes (src/cloning), so with the server's settings. */
async function v2Advertisement(runner: GitRunner, repo: string, signal: AbortSignal): Promise<string> {
  const { git, body } = advertisement(runner, repo, 'version=2');
  // Its own limit is a long clone's: the group's deadline (the signal) is what bounds it here.
  const stop = () => git.stop();
  signal.addEventListener('abort', stop, { once: true });
  git.child.stdin.end();
  let stdout = '';
  body.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const [code] = (await once(git.child, 'close').finally(() => signal.removeEventListener('abort', stop))) as [number | null];
  if (code !== 0) throw new Error(`git upload-pack exited with ${code}: ${git.stderr().trim()}`);
  return stdout;
}

function compare(a: readonly number[], b: readonly number[]): number {
  return a[0]! - b[0]! || a[1]! - b[1]!;
}
