#!/usr/bin/env node
// The GitHub-compatible read API (issue 28, "Measure"): forgesync's copy of a
// 20,000-issue project against the fake GitHub serving the same data from memory.
//
//   npm run bench:github-api         build forgesync and the fake, then: node bench/github-api.mjs
//   BENCH_QUICK=1                    2,000 issues, 10,000 for the deep pages, 1 short round (smoke test)
//   BENCH_ISSUES=20000               issues of the project (and a quarter as many pull requests)
//   BENCH_DEEP_ISSUES=100000         issues of the synthetic import whose last page is measured
//   BENCH_ROUNDS=3                   throughput rounds (each: both servers, order rotated)
//   BENCH_SECONDS=8                  seconds per server and round
//   BENCH_CONNECTIONS=8              keep-alive connections of the throughput clients
//   BENCH_SAMPLES=300                latency samples per URL (after 20 not kept)
//   BENCH_STRICT=1                   exit 1 when a goal is missed
//
// Method:
//  - the fake GitHub (test/fake-github, compiled to dist-test/) in a child process
//    (bench/lib/github-api-fake.mjs): a generated project of BENCH_ISSUES issues,
//    BENCH_ISSUES/4 pull requests, 2 comments per issue on average, served with
//    cacheResponses (each answer's JSON kept once rendered: the ceiling), and its
//    real git repository (git fast-import), from which it serves `/contents`.
//  - forgesync's store (SQLite, not timed): every page of the lists the workload
//    reads, taken from that fake and written with the importer's own upsert (so
//    the copied-out list columns are the importer's), under an import row as a
//    finished import has it (bench/lib/github-api-seed.mjs); and a synthetic
//    import of BENCH_DEEP_ISSUES issues (the fake's, renumbered). The fake's
//    repository mirrored as a replication source (`forgesync add` + `sync --wait`
//    over smart HTTP) and recorded as the import's repository source
//    (bench/lib/github-api-git.mjs), so the copy reads contents through its real
//    path (the mirror's served view, cat-file). Then `forgesync serve` as a
//    child process on that data directory.
//  - throughput: a mixed workload of 2,000 requests drawn once from a seeded
//    generator (list filters and orders with pages spread over each list, single
//    issues and pulls, an issue's comments, labels, milestones; one in 15
//    `/contents/README.md` or `/contents/changes` (a directory) when both servers
//    answer them; one in 10 a GraphQL request of `gh issue list` — gh's two,
//    `Issue_fields` and `IssueList`, alternately — which the fake, having no
//    GraphQL, answers with the REST page of the same issues, `/issues?per_page=30`),
//    each asked once of each server first (warm caches, checked 200), then
//    BENCH_CONNECTIONS keep-alive clients ask them round robin for BENCH_SECONDS,
//    per server and round. Ratio = median over rounds of copy ÷ fake requests/s
//    within the round. Goal ≥ 0.5. Then the contents alone, BENCH_SECONDS per server
//    (the copy reads its mirror through cat-file per request; the fake keeps each
//    git command's output once read, bench/lib/github-api-fake.mjs).
//  - latency: one client asks page 1 and page 200 of `issues?state=all&per_page=100`
//    alternately, BENCH_SAMPLES times each; goal p99(page 200) ≤ 1.5 × p99(page 1).
//    The same for page 1 and page 1,000 of the synthetic import (no goal of its own:
//    the issue's "as fast on page 1,000 as on page 1"). Each sample's URL differs by a
//    parameter the servers ignore, so no remembered answer serves it; and "cold": the
//    store's list statement alone on a freshly opened database (nothing remembered:
//    the count and the index walk from the start, as after an import's write).
//  - GraphQL (`gh issue list`'s `IssueList` alone): on the copy only, when it serves
//    `/github/graphql` (the fake has no GraphQL to compare with): the same request
//    again and again (its remembered answer), and with a variable the query does
//    not declare varied per request (each answer read and executed anew), beside
//    the REST page of the same issues varied by an ignored parameter.
// Results also go to bench/results/github-api.json.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { intSetting, loads, log, progress, quick, reportLoad, table, writeResults } from './lib/util.mjs';
import { median, rotate } from './lib/harness.mjs';
import { seedFromFake, seedSynthetic } from './lib/github-api-seed.mjs';
import { entryText, latencies, throughput, warm, workloadPaths } from './lib/github-api-load.mjs';
import { ghIssueList, graphqlProbe, REST_ISSUE_LIST } from './lib/github-api-graphql.mjs';
import { mirrorForImport } from './lib/github-api-git.mjs';
import { coldPages } from './lib/github-api-cold.mjs';
import { startServe, stop } from './lib/webhooks-procs.mjs';

const env = process.env;
const cfg = {
  issues: intSetting('BENCH_ISSUES', quick ? 2000 : 20000, 100),
  deepIssues: intSetting('BENCH_DEEP_ISSUES', quick ? 10000 : 100000, 1000),
  rounds: intSetting('BENCH_ROUNDS', quick ? 1 : 3, 1),
  seconds: intSetting('BENCH_SECONDS', quick ? 2 : 8, 1),
  connections: intSetting('BENCH_CONNECTIONS', 8, 1),
  samples: intSetting('BENCH_SAMPLES', quick ? 60 : 300, 10),
  strict: env.BENCH_STRICT === '1',
};
const GOALS = { throughputVsFake: 0.5, deepPageP99: 1.5 };
const FAKE_TOKEN = randomBytes(16).toString('hex');
const READ_TOKEN = randomBytes(16).toString('hex');
const headers = (token) => ({ authorization: `token ${token}`, 'user-agent': 'forgesync-bench', accept: 'application/vnd.github+json' });

const root = mkdtempSync(join(os.tmpdir(), 'forgesync-bench-github-api-'));
const dataDir = join(root, 'data');
mkdirSync(dataDir, { recursive: true });
let fakeChild;
let serve;
process.once('exit', () => {
  for (const child of [fakeChild, serve?.child]) if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});
process.once('SIGINT', () => process.exit(130));

/** Starts the fake's process; resolves with its JSON line ({ apiUrl, owner, repo, gitUrl }). */
function startFake() {
  const script = fileURLToPath(new URL('./lib/github-api-fake.mjs', import.meta.url));
  fakeChild = spawn(process.execPath, [script, String(cfg.issues), FAKE_TOKEN], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buffer = '';
    fakeChild.stdout.on('data', (chunk) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline >= 0) resolve(JSON.parse(buffer.slice(0, newline)));
    });
    fakeChild.once('exit', (code) => reject(new Error(`the fake GitHub exited with ${code}`)));
  });
}

log(`GitHub-compatible read API benchmark — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'})`);
const loadAtStart = os.loadavg();
const loadSamples = [];
setInterval(() => loadSamples.push(os.loadavg()[0]), 5000).unref();
log(`load average at start: ${loads(loadAtStart)}`);

// ---- fixtures (not timed) ----
let started = Date.now();
const fake = await startFake();
log(`fake GitHub: ${cfg.issues.toLocaleString('en-US')} issues generated and listening in ${((Date.now() - started) / 1000).toFixed(0)} s`);
const databaseUrl = `sqlite:${join(dataDir, 'forgesync.db')}`;
started = Date.now();
const seeded = await seedFromFake(databaseUrl, fake, FAKE_TOKEN, progress);
const deep = { owner: fake.owner, name: 'deep-list' };
await seedSynthetic(databaseUrl, { ...deep, apiUrl: fake.apiUrl, issues: cfg.deepIssues, templates: seeded.issueTemplates, repository: seeded.repository }, progress);
progress('');
log(`store seeded in ${((Date.now() - started) / 1000).toFixed(0)} s: ${Object.entries(seeded.counts).map(([list, n]) => `${list} ${n}`).join(', ')}; ${deep.owner}/${deep.name} ${cfg.deepIssues.toLocaleString('en-US')} issues`);
started = Date.now();
progress('mirroring the repository');
await mirrorForImport({ dataDir, databaseUrl, name: fake.repo, gitUrl: fake.gitUrl });
progress('');
log(`repository mirrored (forgesync add + sync --wait from the fake's git) in ${((Date.now() - started) / 1000).toFixed(0)} s`);
serve = await startServe(
  { FORGESYNC_DATA_DIR: dataDir, FORGESYNC_READ_TOKEN: READ_TOKEN, FORGESYNC_ADMIN_TOKEN: randomBytes(16).toString('hex'), FORGESYNC_SYNC_INTERVAL: '7d', FORGESYNC_VERIFY_INTERVAL: '7d', FORGESYNC_LOG_LEVEL: 'info' },
  join(root, 'serve.log'),
);
const repoPath = `/repos/${fake.owner}/${fake.repo}`;
const ghBodies = ghIssueList({ owner: fake.owner, repo: fake.repo });
const copyGraphql = Object.fromEntries(Object.entries(ghBodies).map(([name, body]) => [name, { url: `${serve.address}/github/graphql`, body }]));
const servers = {
  copy: { base: `${serve.address}/github${repoPath}`, headers: headers(READ_TOKEN), pid: serve.child.pid, graphql: copyGraphql },
  // No GraphQL on the fake: the REST page of the same issues stands in for gh's requests.
  fake: { base: `${fake.apiUrl}${repoPath}`, headers: headers(FAKE_TOKEN), pid: fakeChild.pid, graphql: Object.fromEntries(Object.keys(ghBodies).map((name) => [name, REST_ISSUE_LIST])) },
};

// ---- the workload ----
const issuePages = Math.ceil(seeded.counts['/issues'] / 100);
const contents = ['/contents/README.md', '/contents/changes'];
const contentsServed = (await warm(servers.copy, contents, 1)).length === 0 && (await warm(servers.fake, contents, 1)).length === 0;
const graphqlNames = Object.keys(ghBodies);
const graphqlServed = (await warm(servers.copy, graphqlNames.map((name) => ({ graphql: name })), 1)).length === 0;
let paths = workloadPaths({ ...seeded, labels: ['bug', 'enhancement', 'documentation'], issuePages, contents: contentsServed ? contents : [], graphql: graphqlServed ? graphqlNames : [] }, 2000);
const refused = { copy: await warm(servers.copy, paths, cfg.connections), fake: await warm(servers.fake, paths, cfg.connections) };
for (const [name, bad] of Object.entries(refused)) if (bad.length > 0) log(`warning: ${name} did not answer 200 to ${bad.length} request(s), e.g. ${entryText(bad[0])}`);
const dropped = new Set([...refused.copy, ...refused.fake]);
paths = paths.filter((path) => !dropped.has(path));
const mix = { graphql: paths.filter((path) => typeof path !== 'string').length, contents: paths.filter((path) => typeof path === 'string' && path.startsWith('/contents')).length };
const graphqlMix = graphqlServed ? `${mix.graphql} GraphQL (gh issue list's two requests)` : 'no GraphQL (the copy refused it)';
const contentsMix = contentsServed ? `${mix.contents} contents (${contents.join(', ')})` : 'no contents (not served by both)';
log(`workload: ${paths.length} requests (${dropped.size} dropped): ${graphqlMix}, ${contentsMix}; ${cfg.rounds} round(s) × ${cfg.seconds} s × ${cfg.connections} connections per server`);

const rounds = [];
for (let r = 0; r < cfg.rounds; r++) {
  const round = {};
  for (const name of rotate(['copy', 'fake'], r)) {
    progress(`round ${r + 1}: ${name}`);
    round[name] = await throughput(servers[name], paths, cfg);
  }
  rounds.push(round);
}
progress('');
// The contents alone (the copy reads its mirror through cat-file per request, the fake answers from memory), so the
// mixed figure can be read against them.
progress('contents alone');
const contentsRates = contentsServed ? { copy: await throughput(servers.copy, contents, cfg), fake: await throughput(servers.fake, contents, cfg) } : undefined;
progress('');
const perSecond = (name) => median(rounds.map((round) => round[name].perSecond));
const throughputRatio = median(rounds.map((round) => round.copy.perSecond / round.fake.perSecond));
const failed = (name) => rounds.reduce((sum, round) => sum + round[name].failed, 0);

// ---- latency of deep pages ----
// Each sample's URL differs (`&sample=<n>`, a parameter the API ignores), so no remembered answer serves it: each is
// read from the store and rendered anew (the list's total and page ends, which the store remembers, still help).
progress('latency: page 1 vs page 200');
const [copyPage1, copyPage200] = await latencies(servers.copy, ['/issues?state=all&per_page=100&page=1', '/issues?state=all&per_page=100&page=200'], { samples: cfg.samples, warmup: 20, vary: true });
const [fakePage1, fakePage200] = await latencies(servers.fake, ['/issues?state=all&per_page=100&page=1', '/issues?state=all&per_page=100&page=200'], { samples: cfg.samples, warmup: 20, vary: true });
const deepLast = Math.ceil(cfg.deepIssues / 100);
progress(`latency: page 1 vs page ${deepLast} of ${cfg.deepIssues}`);
const deepServer = { ...servers.copy, base: `${serve.address}/github/repos/${deep.owner}/${deep.name}` };
const [deepPage1, deepPageLast] = await latencies(deepServer, ['/issues?state=all&per_page=100&page=1', `/issues?state=all&per_page=100&page=${deepLast}`], { samples: cfg.samples, warmup: 20, vary: true });
progress('cold pages');
const [coldPage1, coldPageLast] = await coldPages(databaseUrl, deep.name, [1, deepLast], Math.min(cfg.samples, 100));
progress('');
const graphql = await graphqlProbe({ address: serve.address, token: READ_TOKEN, owner: fake.owner, repo: fake.repo, seconds: cfg.seconds, connections: cfg.connections });

// ---- report ----
const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
const met = (ok) => (ok ? 'met' : 'MISSED');
const page200Ratio = copyPage200.p99 / copyPage1.p99;
const deepRatio = deepPageLast.p99 / deepPage1.p99;
log('');
log(table(
  ['measure', 'copy (forgesync)', 'fake (in memory)', 'ratio', 'goal'],
  [
    [`mixed reads (${mix.graphql} GraphQL, ${mix.contents} contents of ${paths.length}), requests/s (median of rounds)`, fmt(perSecond('copy'), 0), fmt(perSecond('fake'), 0), fmt(throughputRatio, 2), `≥ ${GOALS.throughputVsFake}: ${met(throughputRatio >= GOALS.throughputVsFake)}`],
    ...(contentsRates ? [[`${contents.join(' + ')} alone, requests/s`, fmt(contentsRates.copy.perSecond, 0), fmt(contentsRates.fake.perSecond, 0), fmt(contentsRates.copy.perSecond / contentsRates.fake.perSecond, 2), '']] : []),
    ['issues?state=all&per_page=100 page 1, p50/p99 ms', `${fmt(copyPage1.p50)}/${fmt(copyPage1.p99)}`, `${fmt(fakePage1.p50)}/${fmt(fakePage1.p99)}`, '', ''],
    ['… page 200, p50/p99 ms', `${fmt(copyPage200.p50)}/${fmt(copyPage200.p99)}`, `${fmt(fakePage200.p50)}/${fmt(fakePage200.p99)}`, fmt(page200Ratio, 2), `≤ ${GOALS.deepPageP99}: ${met(page200Ratio <= GOALS.deepPageP99)}`],
    [`${cfg.deepIssues} issues: page 1, p50/p99 ms`, `${fmt(deepPage1.p50)}/${fmt(deepPage1.p99)}`, '', '', ''],
    [`… page ${deepLast}, p50/p99 ms`, `${fmt(deepPageLast.p50)}/${fmt(deepPageLast.p99)}`, '', fmt(deepRatio, 2), `(≤ ${GOALS.deepPageP99}: ${met(deepRatio <= GOALS.deepPageP99)})`],
    [`… cold (store only, nothing remembered): page 1, p50/p99 ms`, `${fmt(coldPage1.p50)}/${fmt(coldPage1.p99)}`, '', '', ''],
    [`… cold: page ${deepLast}, p50/p99 ms`, `${fmt(coldPageLast.p50)}/${fmt(coldPageLast.p99)}`, '', fmt(coldPageLast.p99 / coldPage1.p99, 2), ''],
    ...(graphql
      ? [
          ['GraphQL gh issue list (IssueList), same request, requests/s', fmt(graphql.remembered, 0), 'no GraphQL', '', ''],
          ['… each answer computed anew, requests/s', fmt(graphql.computed, 0), 'no GraphQL', '', ''],
          [`REST ${REST_ISSUE_LIST} each computed anew, requests/s`, fmt(graphql.restComputed, 0), '', fmt(graphql.computed / graphql.restComputed, 2), '(GraphQL ÷ REST)'],
        ]
      : []),
  ],
));
log(`rounds (copy/fake requests/s): ${rounds.map((round) => `${fmt(round.copy.perSecond, 0)}/${fmt(round.fake.perSecond, 0)}`).join(', ')}; non-200 answers: copy ${failed('copy')}, fake ${failed('fake')}`);
if (!graphql) log('GraphQL: /github/graphql not served (or refused the query): not measured');
reportLoad(loadAtStart, loadSamples);
const goalsMet = throughputRatio >= GOALS.throughputVsFake && page200Ratio <= GOALS.deepPageP99;
const file = writeResults('github-api', { cfg, goals: GOALS, goalsMet, throughput: { rounds, ratio: throughputRatio }, latency: { copyPage1, copyPage200, fakePage1, fakePage200, deepPage1, deepPageLast, coldPage1, coldPageLast }, graphql, contentsServed, contentsRates, graphqlServed, mix, seeded: seeded.counts });
log(`results: ${file}`);
await stop(serve.child);
fakeChild.kill('SIGTERM');
if (cfg.strict && !goalsMet) process.exit(1);
