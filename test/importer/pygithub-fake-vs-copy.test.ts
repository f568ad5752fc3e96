import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject } from '../fake-github/index.js';
import { importFakeToCopy, type FakeAndCopy } from './support/fake-vs-copy.js';

/*
 * PyGithub (Debian's python3-github) makes the same calls, written as its
 * users write them, of the fake GitHub and of forgesync's copy of it
 * (support/pygithub-compare.py: issues with every filter, pulls, reviews,
 * timeline, labels, milestones, releases, branches, commits, git data,
 * contents). What it read must be the same, call by call, once the fake's
 * API base is replaced by the copy's.
 */

const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./support/pygithub-compare.py', import.meta.url));
const run = promisify(execFile);

/** Fields the copy answers differently on purpose: release assets are served from the copy's own files, its download count is not kept. */
const ASSET_FIELDS = new Set(['browser_download_url', 'download_count']);

/** The fake links its errors to the GitHub Enterprise Server docs, the copy to GitHub's: the same pages. */
const ENTERPRISE_DOCS = 'https://docs.github.com/enterprise-server@3.17/';

/** What is compared of a call's result: without the asset fields, error documentation links on GitHub's docs. */
function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(comparable);
  if (typeof value === 'string') return value.startsWith(ENTERPRISE_DOCS) ? `https://docs.github.com/${value.slice(ENTERPRISE_DOCS.length)}` : value;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !ASSET_FIELDS.has(key)).map(([key, child]) => [key, comparable(child)]));
}

async function pygithub(baseUrl: string, token: string, project: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(PYTHON, [SCRIPT, baseUrl, project], { env: { PATH: process.env.PATH, PYGITHUB_TOKEN: token }, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  return JSON.parse(stdout) as Record<string, unknown>;
}

let pair: FakeAndCopy;
let fromFake: Record<string, unknown>;
let fromCopy: Record<string, unknown>;

beforeAll(async () => {
  // No attachments in bodies: the copy rewrites those to its own files, which is tested elsewhere.
  pair = await importFakeToCopy({ project: generateProject({ issues: 24, pulls: 8, commentsPerIssue: 2, users: 8, releases: 3, attachmentEvery: 100_000, seed: 28 }) });
  const fakeText = JSON.stringify(await pygithub(pair.harness.fake.apiUrl, pair.harness.token, pair.project));
  fromFake = JSON.parse(fakeText.split(pair.harness.fake.apiUrl).join(pair.copyBase)) as Record<string, unknown>;
  fromCopy = await pygithub(pair.copyBase, pair.readToken, pair.project);
}, 240_000);

afterAll(async () => {
  await pair?.close();
});

describe('PyGithub reads the copy as it reads GitHub', () => {
  it('makes every call on both, none failing but the missing issue', () => {
    expect(Object.keys(fromCopy).sort()).toEqual(Object.keys(fromFake).sort());
    const failed = (results: Record<string, unknown>) => Object.keys(results).filter((key) => (results[key] as { error?: unknown } | null)?.error !== undefined);
    expect(failed(fromFake)).toEqual(['missing_issue']);
    expect(failed(fromCopy)).toEqual(['missing_issue']);
    expect(Object.keys(fromFake).length).toBeGreaterThan(50);
  });

  it('reads the same, call by call', () => {
    const compared = Object.keys(fromFake).filter((name) => name !== 'tarball_link');
    const differing = compared.filter((key) => !isDeepStrictEqual(comparable(fromCopy[key]), comparable(fromFake[key])));
    // The names of all that differ, then the first difference in full.
    if (differing.length > 0) console.error(`PyGithub read differently: ${differing.join(', ')}`);
    for (const key of differing.slice(0, 1)) expect({ [key]: comparable(fromCopy[key]) }).toEqual({ [key]: comparable(fromFake[key]) });
    expect(differing).toEqual([]);
  });

  it('gets an archive link on the server it asked', () => {
    expect(String(fromCopy.tarball_link)).toMatch(new RegExp(`^${pair.copyBase.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/`));
    expect(String(fromFake.tarball_link)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
  });
});
