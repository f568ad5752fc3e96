// bench/import.mjs's freshness measurement (issue 29): one `forgesync serve`
// child on the embedded SQLite default follows 50 imports of 50 fake GitHubs
// (small generated projects without git, all hosted by this process). Users
// act on the fakes (FakeUpstream: the fake changes as GitHub would and plans
// GitHub's deliveries), open-loop at a fixed number of deliveries a second
// spread over the imports; each delivery is signed and POSTed to
// /hooks/github, and the change it announces is watched on the read API
// (import-freshness-poll.mjs) until it shows. Measured: delivery → visible,
// the deliveries not answered 202, and the counted requests the fakes saw per
// delivery. The baseline, in the same run: the same kind of change made
// without a delivery and brought by `POST /api/imports/{name}/sync` (what the
// hourly sync does).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Poller, request } from './import-freshness-poll.mjs';
import { percentile } from './webhooks-load.mjs';
import { cpuSeconds } from './util.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { FakeUpstream, generateProject, prng, startFakeGitHub } = await import(join(ROOT, 'dist-test/test/fake-github/index.js'));
const { ForgesyncProcess, requireBuilt } = await import(join(ROOT, 'dist-test/test/support/cluster/processes.js'));

const PROFILE = new URL('./import-freshness-profile.mjs', import.meta.url).href;
const secret = () => randomBytes(18).toString('hex');
/** No primary limit is met: the requests are counted, never refused. */
const UNLIMITED = 10_000_000;
/** Each fake's project: 50 issues and pull requests, ~50 comments, 10 labels. */
const PROJECT = { issues: 40, pulls: 10, commentsPerIssue: 1, reviewsPerPull: 1, reviewCommentsPerPull: 1, users: 8, labels: 10, milestones: 2, releases: 1 };
/** A change not visible this long after its delivery counts as never seen. */
const GIVE_UP_MS = 30_000;
/** After the last change is seen: the longest settle (1 s) and a margin, for the fetches of targets no watch looks at (a pull request's issue shape). */
const QUIET_MS = 1_500;

/** The users' actions and their shares: each sends the deliveries GitHub sends for it (FakeUpstream's `planned`). */
export const MIX = [
  ['issue edit', 0.45],
  ['new comment', 0.25],
  ['label added', 0.15],
  ['pull request edit', 0.15],
];

/** The marker a change leaves in a title or body: a sequence number (a later one on the same object supersedes it). */
const marker = (seq) => `[fresh ${seq}]`;
const markerOf = (text) => Number(/\[fresh (\d+)\]/.exec(String(text ?? ''))?.[1] ?? -1);

/**
 * Inputs: imports (50), rates (deliveries a second, [10, 200]), seconds
 * measured at each (20) after warmupSeconds (3) at that rate, pollMs (the
 * watch's interval, 20), watchedPerSecond (25: the changes watched on the
 * read API, drawn at random among all; see act()), syncs (baseline samples,
 * 5), seed, onProgress. Returns the figures of each rate and of the
 * baseline (see the file's head).
 */
export async function measureFreshness({ imports = 50, rates = [10, 200], seconds = 20, warmupSeconds = 3, pollMs = 20, watchedPerSecond = 25, syncs = 5, seed = 29, onProgress = () => {} } = {}) {
  requireBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-bench-freshness-'));
  const token = secret();
  const sites = [];
  let serve;
  let poller;
  let keep = Boolean(process.env.BENCH_KEEP);
  try {
    onProgress(`freshness: starting ${imports} fake GitHubs`);
    for (let index = 0; index < imports; index++) sites.push(await startSite(index, token));
    const env = { admin: secret(), hookSecret: secret(), random: prng(seed), seq: 0, sites, watchedPerSecond };
    serve = await startServe(dataDir, env, token);
    env.origin = new URL(String(await serve.start()).replace('0.0.0.0', '127.0.0.1'));
    poller = new Poller(env.origin, env.admin, pollMs);
    env.poller = poller;
    await importAll(env, onProgress);
    const runs = [];
    for (const rate of rates) {
      onProgress(`freshness: ${rate}/s warm-up`);
      await runPhase(env, rate, warmupSeconds);
      onProgress(`freshness: ${rate}/s for ${seconds} s`);
      runs.push(await runPhase(env, rate, seconds, serve));
    }
    onProgress('freshness: baseline, changes brought by import sync');
    const baseline = await syncBaseline(env, syncs);
    return { imports, project: PROJECT, mix: Object.fromEntries(MIX), pollMs, watchedPerSecond, giveUpMs: GIVE_UP_MS, seconds, warmupSeconds, runs, baseline };
  } catch (error) {
    keep = true;
    throw new Error(`${error.message} (forgesync's data and log are in ${dataDir})`, { cause: error });
  } finally {
    poller?.close();
    await serve?.stop();
    for (const site of sites) await site.fake.close();
    if (keep) console.error(`kept ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Fake number `index`: its own repository (name and id), an upstream to act on it, its numbers by kind. */
async function startSite(index, token) {
  const name = `fresh-${String(index).padStart(2, '0')}`;
  const fake = await startFakeGitHub({ tokens: [token], git: false, limit: UNLIMITED, project: generateProject({ ...PROJECT, name, seed: 700 + index }) });
  const issues = fake.project.issues;
  return {
    fake,
    name,
    upstream: new FakeUpstream(fake),
    repoPath: `/github/repos/${fake.project.repo.owner}/${name}`,
    titles: new Map(issues.map((issue) => [issue.number, issue.title])),
    issueNumbers: issues.filter((issue) => !issue.pull).map((issue) => issue.number),
    pullNumbers: issues.filter((issue) => issue.pull).map((issue) => issue.number),
    allNumbers: issues.map((issue) => issue.number),
  };
}

/** The serve child: SQLite in `dataDir`, one credential bound to every fake's hosts, the webhook secret. */
function startServe(dataDir, env, token) {
  const hosts = env.sites.flatMap(({ fake }) => [new URL(fake.apiUrl).host, new URL(fake.webUrl).host]);
  const secrets = join(dataDir, 'secrets.json');
  writeFileSync(secrets, JSON.stringify({ GH: { token, hosts } }), { mode: 0o600 });
  return new ForgesyncProcess('serve', ['--port', '0'], {
    FORGESYNC_DATA_DIR: dataDir,
    FORGESYNC_SECRETS_FILE: secrets,
    FORGESYNC_ADMIN_TOKEN: env.admin,
    FORGESYNC_GITHUB_WEBHOOK_SECRET: env.hookSecret,
    FORGESYNC_HOST: '127.0.0.1',
    FORGESYNC_ALLOW_NETWORKS: '127.0.0.1/32',
    FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http',
    FORGESYNC_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    // BENCH_CPU_PROF=<dir>: the serve child's CPU profile and event loop delay per phase, written there (import-freshness-profile.mjs).
    ...(process.env.BENCH_CPU_PROF ? { BENCH_CPU_PROF: process.env.BENCH_CPU_PROF, NODE_OPTIONS: `--import=${PROFILE}` } : {}),
  }, join(dataDir, 'serve.log'));
}

/** An admin API call on the serve child; the parsed answer (throws on an unexpected status). */
async function api(env, method, path, body, expect = [200, 202]) {
  // Every state-changing call says JSON, an empty body included (the API refuses it otherwise).
  const headers = { authorization: `Bearer ${env.admin}`, ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}) };
  const answer = await request(env.origin, { method, path, headers, body: body ? JSON.stringify(body) : undefined });
  if (!expect.includes(answer.status)) throw new Error(`${method} ${path} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
  return JSON.parse(answer.text);
}

/** Creates one import per fake and waits until every one is `synced`. */
async function importAll(env, onProgress) {
  for (const { fake, name } of env.sites) {
    await api(env, 'POST', '/api/imports', { project: `${fake.project.repo.owner}/${name}`, name, apiUrl: fake.apiUrl, credentials: ['GH'] });
  }
  const deadline = Date.now() + 600_000;
  for (;;) {
    const list = await api(env, 'GET', '/api/imports');
    const failed = list.find((status) => status.state === 'failed' || status.state === 'cancelled');
    if (failed) throw new Error(`import ${failed.name} ${failed.state}: ${JSON.stringify(failed.failures).slice(0, 500)}`);
    const synced = list.filter((status) => status.state === 'synced').length;
    onProgress(`freshness: ${synced} of ${env.sites.length} imports synced`);
    if (synced === env.sites.length) return;
    if (Date.now() > deadline) throw new Error(`${synced} of ${env.sites.length} imports synced after 10 minutes`);
    await sleep(500);
  }
}

/**
 * One user action of `kind` on `site`, made now on the fake: the
 * deliveries GitHub sends for it, and the read API path and check that
 * say the copy shows it.
 */
async function makeChange(env, site, kind) {
  const { upstream } = site;
  const seq = ++env.seq;
  const pick = (list) => list[Math.floor(env.random() * list.length)];
  const quiet = { deliver: false };
  if (kind === 'issue edit' || kind === 'pull request edit') {
    const pull = kind === 'pull request edit';
    const number = pick(pull ? site.pullNumbers : site.issueNumbers);
    const title = `${site.titles.get(number)} ${marker(seq)}`;
    const { planned } = pull ? await upstream.editPull(number, { title }, quiet) : await upstream.editIssue(number, { title }, quiet);
    // A later edit of the same title shows this one's too: seen once the copy's marker is at least this one.
    const path = `${site.repoPath}/${pull ? 'pulls' : 'issues'}/${number}`;
    return { planned, path, check: (status, body) => status === 200 && markerOf(body.title) >= seq };
  }
  if (kind === 'new comment') {
    const { comment, planned } = await upstream.comment(pick(site.allNumbers), `A remark ${marker(seq)}`, quiet);
    return { planned, path: `${site.repoPath}/issues/comments/${comment.id}`, check: (status, body) => status === 200 && markerOf(body.body) === seq };
  }
  // A label the issue or pull request does not have yet (an existing one: GitHub sends `labeled` alone).
  for (let tries = 0; ; tries++) {
    const number = pick(site.allNumbers);
    const have = new Set(upstream.project.issue(number).labels);
    const free = upstream.project.labels.filter((label) => !have.has(label.name));
    if (free.length === 0 && tries < 1000) continue;
    if (free.length === 0) throw new Error(`import ${site.name}: every issue has every label; a longer run needs more labels (PROJECT.labels)`);
    const name = pick(free).name;
    const { planned } = await upstream.labelIssue(number, name, quiet);
    return { planned, path: `${site.repoPath}/issues/${number}`, check: (status, body) => status === 200 && (body.labels ?? []).some((label) => label.name === name) };
  }
}

/** The action of the mix a draw in [0, 1) falls on. */
function kindOf(draw) {
  let sum = 0;
  for (const [kind, share] of MIX) if (draw < (sum += share)) return kind;
  return MIX.at(-1)[0];
}

/**
 * One action on a random import: made, its deliveries POSTed in GitHub's
 * order, its change watched from the first POST when drawn (`watchShare`:
 * the watch's polls cost the serve child about a millisecond of its one
 * thread each, so watching every change at 200/s would measure how many
 * polls it answers rather than how fresh it is; a random draw keeps the
 * sample unbiased). For every change also when it was answered 202
 * (`acceptedMs`) and when the fake was first asked for its object after
 * the POST (`fetchedMs`, filled by whenFetched()), which split the time.
 */
async function act(env, tally, watchShare) {
  const site = env.sites[Math.floor(env.random() * env.sites.length)];
  const kind = kindOf(env.random());
  const watched = env.random() < watchShare;
  const change = await makeChange(env, site, kind);
  const sentAt = performance.now();
  const sentEpoch = Date.now();
  const seen = watched ? env.poller.watch(change.path, change.check, sentAt, GIVE_UP_MS) : undefined;
  let acceptedMs = null;
  for (const { event, payload } of change.planned) {
    const built = site.upstream.buildDelivery(event, payload, env.hookSecret);
    const answer = await request(env.origin, { method: 'POST', path: '/hooks/github', headers: built.headers, body: built.body });
    acceptedMs ??= answer.at - sentAt;
    tally.deliveries++;
    const accepted = answer.status === 202 && /"result":"accepted"/.test(answer.text);
    if (!accepted) tally.refused.push(`${answer.status} ${answer.text.slice(0, 120)}`);
  }
  // The fake's path of the object the watch reads (the read API's path below /github is the REST path).
  return { kind, site, watched, sentEpoch, fetchPath: change.path.replace(/^\/github/, ''), acceptedMs, ms: watched ? await seen : undefined };
}

/** Fills each action's `fetchedMs`: ms from its POST to the fake's first request for its object at or after it. */
function whenFetched(done) {
  for (const item of done) {
    const hit = item.site.fake.requests.find((entry) => entry.at >= item.sentEpoch && entry.path.endsWith(item.fetchPath));
    item.fetchedMs = hit ? hit.at - item.sentEpoch : null;
  }
}

/** Counted requests the fakes logged from `marks` (their log lengths) on, and by kind of path. */
function countedSince(sites, marks) {
  const byPathKind = {};
  let counted = 0;
  sites.forEach(({ fake }, index) => {
    for (const entry of fake.requests.slice(marks[index])) {
      if (!entry.counted) continue;
      counted++;
      byPathKind[entry.pathKind] = (byPathKind[entry.pathKind] ?? 0) + 1;
    }
  });
  return { counted, byPathKind };
}

/**
 * `seconds` of actions at `rate` deliveries a second (open loop: action i
 * starts at t0 + i/rate, every action here sends one delivery), then until
 * every change is seen (or given up) and the fakes are quiet. With `serve`,
 * the figures of the phase; without (a warm-up), nothing.
 */
async function runPhase(env, rate, seconds, serve) {
  const marks = env.sites.map(({ fake }) => fake.requests.length);
  const polls = env.poller.snapshot();
  const cpuAt = [cpuSeconds(serve?.child?.pid), process.cpuUsage()];
  const tally = { deliveries: 0, refused: [] };
  const loads = [loadavg()[0]];
  const sampling = setInterval(() => loads.push(loadavg()[0]), 1000);
  const actions = [];
  const total = Math.round(rate * seconds);
  const t0 = performance.now();
  while (actions.length < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
    while (actions.length < due) actions.push(act(env, tally, Math.min(1, env.watchedPerSecond / rate)));
    await sleep(1);
  }
  const sendMs = performance.now() - t0;
  const done = await Promise.all(actions);
  const wallMs = performance.now() - t0;
  await sleep(QUIET_MS);
  clearInterval(sampling);
  if (!serve) return undefined;
  whenFetched(done);
  const busy = (performance.now() - t0) / 1000;
  const own = process.cpuUsage(cpuAt[1]);
  const { counted, byPathKind } = countedSince(env.sites, marks);
  if (process.env.BENCH_CPU_PROF) serve.signal('SIGUSR2');
  return {
    rate,
    achievedRate: tally.deliveries / (sendMs / 1000),
    actions: done.length,
    deliveries: tally.deliveries,
    non202: tally.refused.length,
    refusedSample: tally.refused.slice(0, 5),
    ...latencies(done),
    split: split(done),
    counted,
    perDelivery: counted / tally.deliveries,
    byPathKind,
    polls: env.poller.since(polls),
    wallMs,
    forgesyncCpuPct: cpuAt[0] === null ? null : (100 * (cpuSeconds(serve.child.pid) - cpuAt[0])) / busy,
    benchCpuPct: (100 * (own.user + own.system)) / 1e6 / busy,
    // Other work on the machine makes the figures noisy: the highest one-minute load seen (2 CPUs here).
    maxLoad: Math.max(...loads, loadavg()[0]),
  };
}

/** p50, p99 and max of the watched changes, overall and by kind of action (one never seen counts as Infinity); how many were never seen. */
function latencies(all) {
  const done = all.filter((item) => item.watched);
  const summary = (list) => {
    const sorted = list.map((item) => item.ms ?? Infinity).sort((a, b) => a - b);
    return { n: list.length, unseen: sorted.filter((ms) => ms === Infinity).length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1) ?? NaN };
  };
  const byKind = Object.fromEntries(MIX.map(([kind]) => [kind, summary(done.filter((item) => item.kind === kind))]));
  return { ...summary(done), byKind };
}

/**
 * Where the time of the changes seen went, p50 and p99 of each part: POST
 * to 202 (the intake), POST to the fake's fetch of the object (intake, the
 * job's wake-up and the settle window), fetch to seen (the fetch, the
 * commit, and the watch's interval and answer).
 */
function split(done) {
  const part = (values) => {
    const sorted = values.filter((value) => value !== null && Number.isFinite(value)).sort((a, b) => a - b);
    return { p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
  };
  const seen = done.filter((item) => item.watched && item.ms !== null);
  return {
    // Of every change, watched or not:
    toAccepted: part(done.map((item) => item.acceptedMs)),
    toFetch: part(done.map((item) => item.fetchedMs)),
    notFetched: done.filter((item) => item.fetchedMs === null).length,
    // Of the watched ones:
    fetchToSeen: part(seen.map((item) => (item.fetchedMs === null ? null : item.ms - item.fetchedMs))),
  };
}

/**
 * The baseline: `count` issue edits, each on another import, made without
 * a delivery and brought by `POST /api/imports/{name}/sync` (the hourly
 * path, run now): ms from the request to the change visible, one at a time.
 */
async function syncBaseline(env, count) {
  const times = [];
  for (const site of env.sites.slice(0, count)) {
    const seq = ++env.seq;
    const number = site.issueNumbers[0];
    await site.upstream.editIssue(number, { title: `${site.titles.get(number)} ${marker(seq)}` }, { deliver: false });
    const started = performance.now();
    const seen = env.poller.watch(`${site.repoPath}/issues/${number}`, (status, body) => status === 200 && markerOf(body.title) >= seq, started, 120_000);
    await api(env, 'POST', `/api/imports/${site.name}/sync`);
    const ms = await seen;
    if (ms === null) throw new Error(`import ${site.name}: the sync did not bring the edit of issue ${number} within 120 s`);
    times.push(ms);
    // The next sync starts on a quiet process.
    while ((await api(env, 'GET', `/api/imports/${site.name}`)).state !== 'synced') await sleep(100);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { times, p50Ms: percentile(sorted, 50), maxMs: sorted.at(-1) };
}
