// The fake GitHub of bench/github-api.mjs, in a process of its own (as forgesync's
// serve is in its own): a generated project of BENCH_ISSUES issues served with
// cacheResponses (each answer's JSON kept once rendered: the in-memory ceiling),
// no rate limit to speak of, and its real git repository (built with `git
// fast-import`, test/fake-github/git.ts): `/contents` is read from it (each git
// command's output kept once read: cacheResponses), and forgesync mirrors it over
// smart HTTP from `gitUrl`. Prints one JSON line {apiUrl, owner, repo, gitUrl}
// once listening; serves until SIGTERM.
//
//   node bench/lib/github-api-fake.mjs <issues> <token>

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { startFakeGitHub, generateProject } = await import(join(ROOT, 'dist-test/test/fake-github/index.js'));

const [issues, token] = [Number(process.argv[2]), process.argv[3]];
// Comments and reviews lighter than the generator's defaults: the read workload needs them present, not many.
const project = generateProject({ issues, pulls: Math.floor(issues / 4), commentsPerIssue: 2, reviewsPerPull: 1, reviewCommentsPerPull: 1, users: 200, milestones: 12, labels: 12, seed: 28 });
const fake = await startFakeGitHub({ project, tokens: [token], limit: 1e12, cacheResponses: true, pageCapItems: 1e12, git: true });
process.stdout.write(`${JSON.stringify({ apiUrl: fake.apiUrl, owner: project.repo.owner, repo: project.repo.name, gitUrl: fake.gitUrl })}\n`);
process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
