#!/usr/bin/env node
// Cloning from forgesync (issue 27, "Measure"): `forgesync serve` against the
// reference servers, every goal a ratio measured in this one run.
//
//   npm run bench:serve              build, then: node --expose-gc bench/serve.mjs
//   BENCH_QUICK=1                    3,000 files / 300 commits, 2 rounds, 1 fan-out round, 16 × 2 MiB LFS (smoke test)
//   BENCH_FILES=30000                files of the large generated repository (BENCH_COMMITS=3000 commits)
//   BENCH_SMALL_FILES=300            files of the small one (BENCH_SMALL_COMMITS=30), for the memory goal
//   BENCH_ROUNDS=5                   measured clone rounds (after one warm-up round)
//   BENCH_CLIENTS=32                 concurrent clones of the fan-out
//   BENCH_FANOUT_ROUNDS=3            fan-out rounds per repository and cache setting
//   BENCH_LFS_OBJECTS=64             LFS objects (BENCH_LFS_MIB=4 MiB each), BENCH_LFS_ROUNDS=5 rounds
//   BENCH_LFS_CONCURRENCY=8          parallel LFS downloads (git-lfs's lfs.concurrenttransfers)
//   BENCH_KEEP=1                     keep the temp directory (printed)
//   BENCH_STRICT=1                   exit 1 when a goal is missed
//
// Method:
//  - repositories (not timed): two bare upstreams from bench/lib/snapshots-repo.mjs
//    (seeded fast-import of code-like files, commits editing 4–16 files, then
//    repack -adf and gc): large (BENCH_FILES/BENCH_COMMITS, ~61 MiB packed by
//    default: the express history the issue names cannot be downloaded here, and
//    this is meant to be at least as large) and small; plus an LFS repository whose
//    `.lfsconfig` points at an LFS server in this process (batch API + storage).
//  - forgesync (not timed): the sources added and synced through the library on a
//    SQLite registry in the temp dir, so each has its mirror, its served view
//    (`<mirror>/forgesync-served`: packed-refs + alternates to the mirror's
//    objects), housekeeping's repack (bitmaps, multi-pack index) and its LFS
//    objects; then `node bin/forgesync.js serve` as a child process on that data
//    directory (sync and verify intervals 7 d, so nothing syncs while measuring),
//    started twice: pack cache off (FORGESYNC_PACK_CACHE_MAX_BYTES=0) for goals
//    3, 1 and 2 (without), in that order (LFS before the fan-outs, whose 32
//    pack-objects at once evict the page cache); on (the default 2 GiB) for goal 2
//    (with). Clients send
//    the read token as a Bearer header from the first request on.
//  - the baseline of goal 1: `git http-backend` as a CGI (a process per request)
//    behind a minimal Node server in a child process (bench/lib/serve-http-backend.mjs),
//    with the same uploadpack settings as forgesync's upload-pack, serving the SAME
//    on-disk repository: the mirror itself (what one would serve without forgesync;
//    the headline) and, as a diagnostic, forgesync's served view through the CGI (the
//    very same directory forgesync serves: shows what the view's alternates cost).
//  - goal 1, clone throughput: per round (round 0 warm-up, not counted) and per
//    mode, `git clone --bare --quiet [--filter=blob:none]` from each server in an
//    order rotated per round; throughput = pack bytes received / wall time; the
//    clone deleted (not timed). A third mode, "fetch", is a protocol-v2 fetch of
//    main written in the bench that reads the answer without writing anything:
//    the server's own speed, without this 2-core machine's index-pack. Ratio =
//    median over rounds of forgesync ÷ http-backend(mirror) within the round.
//    "server CPU" = the serving process tree's CPU per clone (/proc, as below).
//  - goal 2, fan-out: BENCH_CLIENTS identical v2 fetches of one commit at once
//    (round r fetches main~r, so each round is a fresh key for the cache), three
//    variants: a full clone of the small and of the large repository, and the
//    large one `--depth 1` (`deepen 1`: what CI checkouts fetch); CPU =
//    utime+stime+cutime+cstime of the serve process from /proc before the burst
//    and after every upload-pack it ran was reaped (upload-pack, its
//    pack-objects or cache hook, and the cache's own pack-objects are all in it),
//    divided by the clients. Cache on: "cold" is the first burst of a commit (one
//    generation, the others joining it), "warm" the same burst again (all hits).
//    Ratio = median over rounds of cold-with-cache ÷ without, per clone, for the
//    large repository's full and shallow variants.
//  - goal 3, LFS: every object downloaded once per round, BENCH_LFS_CONCURRENCY at a
//    time, from forgesync (one batch request, then its hrefs with the header it
//    gave) and from a plain Node file server (its own child process) streaming the
//    same files in forgesync's `<dataDir>/lfs/objects/` with createReadStream;
//    sizes checked every time, SHA-256 in the warm-up round. Ratio = median over
//    rounds of forgesync ÷ file server MiB/s.
//  - goal 4, memory: VmRSS of the serve process sampled every 50 ms during every
//    fan-out burst (and of its tree: the git processes' own memory, reported, no
//    goal); flat = peak with the large repository ≤ 1.25 × peak with the small one.
// Results also go to bench/results/serve.json.

import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { intSetting, loads, log, mib, progress, quick, reportLoad, table, writeResults } from './lib/util.mjs';
import { git } from './lib/git-fleet.mjs';
import { median, rotate } from './lib/harness.mjs';
import { generateRepository } from './lib/snapshots-repo.mjs';
import { startHttpBackend } from './lib/serve-http-backend.mjs';
import { createLfsRepository, makeObjects, startFileServerProcess, startLfsUpstream } from './lib/serve-lfs.mjs';
import { cloneOnce, fanOut, fetchOnce, lfsRound } from './lib/serve-measure.mjs';
import { describePacks, forgesyncEnv, packState, syncSources } from './lib/serve-setup.mjs';
import { fetchRequestBody } from './lib/serve-clients.mjs';
import { startServe, stop } from './lib/webhooks-procs.mjs';

const env = process.env;
const cfg = {
  quick,
  files: intSetting('BENCH_FILES', quick ? 3000 : 30000, 10),
  commits: intSetting('BENCH_COMMITS', quick ? 300 : 3000, 1),
  smallFiles: intSetting('BENCH_SMALL_FILES', 300, 10),
  smallCommits: intSetting('BENCH_SMALL_COMMITS', 30, 1),
  rounds: intSetting('BENCH_ROUNDS', quick ? 2 : 5, 1),
  clients: intSetting('BENCH_CLIENTS', 32, 1),
  fanoutRounds: intSetting('BENCH_FANOUT_ROUNDS', quick ? 1 : 3, 1),
  lfsObjects: intSetting('BENCH_LFS_OBJECTS', quick ? 16 : 64, 1),
  lfsMiB: intSetting('BENCH_LFS_MIB', quick ? 2 : 4, 1),
  lfsRounds: intSetting('BENCH_LFS_ROUNDS', quick ? 3 : 5, 1),
  lfsConcurrency: intSetting('BENCH_LFS_CONCURRENCY', 8, 1),
  keep: env.BENCH_KEEP === '1',
  strict: env.BENCH_STRICT === '1',
};
const GOALS = { cloneVsBackend: 0.9, cpuWithCache: 0.25, lfsVsFiles: 0.8, rssLargeOverSmall: 1.25 };
const TOKEN = randomBytes(16).toString('hex');

const root = mkdtempSync(join(os.tmpdir(), 'forgesync-bench-serve-'));
const scratch = join(root, 'clones');
mkdirSync(scratch);
const children = [];
let serve;
let lfsUpstream;
const cleanup = () => {
  for (const child of [serve?.child, ...children]) if (child && child.exitCode === null) child.kill('SIGKILL');
  if (!cfg.keep) rmSync(root, { recursive: true, force: true });
};
process.once('exit', cleanup);
process.once('SIGINT', () => {
  console.error('\ninterrupted: cleaning up');
  process.exit(130);
});

log(`forgesync serve benchmark — node ${process.version}, ${(await git(['--version'])).trim()}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'})`);
log(`temp dir ${root}${cfg.keep ? ' (kept)' : ''}; ${cfg.rounds} clone round(s) after a warm-up, ${cfg.fanoutRounds} fan-out round(s) of ${cfg.clients} clients, ${cfg.lfsRounds} LFS round(s)`);
const loadAtStart = os.loadavg();
const loadSamples = [];
const loadTimer = setInterval(() => loadSamples.push(os.loadavg()[0]), 5000).unref();
log(`load average at start: ${loads(loadAtStart)}`);
const started = performance.now();

// ---- fixtures (not timed) ----
const upstreams = { big: join(root, 'upstream', 'big.git'), small: join(root, 'upstream', 'small.git') };
for (const [name, dir] of Object.entries(upstreams)) {
  const sizes = name === 'big' ? { files: cfg.files, commits: cfg.commits } : { files: cfg.smallFiles, commits: cfg.smallCommits };
  const t0 = performance.now();
  const stats = await generateRepository(dir, { ...sizes, onProgress: (text) => progress(`${name}: ${text}`) });
  progress('');
  log(`${name} repository: ${stats.filesAtHead.toLocaleString('en-US')} files, ${stats.commits.toLocaleString('en-US')} commits, ${stats.objects.toLocaleString('en-US')} objects, pack ${mib(stats.packBytes).toFixed(1)} MiB (generated in ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}
const history = {};
for (const [name, dir] of Object.entries(upstreams)) history[name] = (await git([`--git-dir=${dir}`, 'rev-list', '--first-parent', 'main'])).split('\n').filter(Boolean);

progress('LFS objects and upstream');
const lfsObjects = makeObjects(cfg.lfsObjects, cfg.lfsMiB * 1024 * 1024);
lfsUpstream = await startLfsUpstream(lfsObjects);
const mediaUpstream = await createLfsRepository(join(root, 'upstream'), 'media', lfsObjects, `${lfsUpstream.url}/media.git/info/lfs`);

progress('forgesync: adding and syncing the sources');
const t0 = performance.now();
const synced = await syncSources(root, [
  { name: 'big', url: upstreams.big },
  { name: 'small', url: upstreams.small },
  { name: 'media', url: mediaUpstream },
]);
progress('');
await lfsUpstream.close();
const dataDir = forgesyncEnv(root).FORGESYNC_DATA_DIR;
const lfsDir = join(dataDir, 'lfs', 'objects');
const storedLfs = countLfsFiles(lfsDir);
log(`forgesync synced the sources in ${((performance.now() - t0) / 1000).toFixed(0)} s; LFS objects stored: ${storedLfs}/${cfg.lfsObjects}`);
log(`  big mirror: ${describePacks(packState(synced.big.mirror))}`);
log(`  big served view: ${describePacks(packState(synced.big.view))}`);

function countLfsFiles(dir) {
  try {
    return readdirSync(dir, { recursive: true }).filter((f) => /[0-9a-f]{64}$/.test(String(f))).length;
  } catch {
    return 0;
  }
}

// The reference servers, in their own processes.
const backend = await startHttpBackend(dirname(synced.big.mirror));
children.push(backend.child);
const files = await startFileServerProcess(lfsDir);
children.push(files.child);

async function startForgesync(cacheBytes) {
  const logFile = join(root, `serve-cache-${cacheBytes}.log`);
  const serveEnv = { ...forgesyncEnv(root), FORGESYNC_READ_TOKEN: TOKEN, FORGESYNC_ADMIN_TOKEN: randomBytes(16).toString('hex'), FORGESYNC_PACK_CACHE_MAX_BYTES: cacheBytes, FORGESYNC_LOG_LEVEL: 'info' };
  const started = await startServe(serveEnv, logFile);
  return { ...started, url: started.address };
}

const contenders = (fs) => {
  const viaCgi = (name, path) => ({ name, pid: backend.child.pid, url: `${backend.url}/${path}`, repoUrl: `${backend.url}/${path}` });
  return [
    { name: 'forgesync', pid: fs.child.pid, url: `${fs.url}/git/big.git`, repoUrl: `${fs.url}/git/big.git` },
    viaCgi('http-backend (mirror)', basename(synced.big.mirror)),
    viaCgi('http-backend (view)', `${basename(synced.big.mirror)}/forgesync-served`),
  ];
};
const MODES = [
  { key: 'full', label: 'git clone --bare', run: (c, verify) => cloneOnce(c, { scratch, token: TOKEN, expectTip: verify ? history.big[0] : undefined }) },
  { key: 'blobless', label: 'git clone --bare --filter=blob:none', run: (c, verify) => cloneOnce(c, { scratch, token: TOKEN, filter: 'blob:none', expectTip: verify ? history.big[0] : undefined }) },
  { key: 'fetch', label: 'v2 fetch of main, read and discarded', run: (c) => fetchOnce(c, { body: fetchRequestBody({ wants: [history.big[0]] }), token: TOKEN }) },
];

// ---- phase A: pack cache off (goals 3, 1, 2 without, 4) ----
/** A phase that fails is reported (and its goal marked failed), the others still run. */
const failures = {};
progress('starting forgesync serve (pack cache off)');
serve = await startForgesync('0');
// LFS first: before the fan-outs, whose 32 pack-objects at once evict the page cache.
const lfs = { forgesync: [], files: [] };
if (storedLfs === cfg.lfsObjects) {
  const lfsContenders = [
    { kind: 'forgesync', name: 'forgesync', pid: serve.child.pid, repoUrl: `${serve.url}/git/media.git`, authorization: `Bearer ${TOKEN}` },
    { kind: 'files', name: 'files', pid: files.child.pid, url: files.url },
  ];
  try {
    for (let r = 0; r <= cfg.lfsRounds; r++) {
      for (const c of rotate(lfsContenders, r)) {
        progress(`LFS round ${r}/${cfg.lfsRounds}: ${c.name}`);
        const result = await lfsRound(c, lfsObjects, { concurrency: cfg.lfsConcurrency, verify: r === 0 });
        if (r > 0) lfs[c.name].push(result);
      }
    }
  } catch (error) {
    failures.lfs = error.message;
    lfs.forgesync.length = lfs.files.length = 0;
    log(`LFS downloads FAILED: ${error.message}`);
  }
}

const clone = Object.fromEntries(MODES.map((m) => [m.key, {}]));
for (let r = 0; r <= cfg.rounds; r++) {
  for (const mode of MODES) {
    for (const c of rotate(contenders(serve), r)) {
      progress(`clone round ${r}/${cfg.rounds}: ${mode.key} from ${c.name}`);
      const result = await mode.run(c, r === 0);
      if (r > 0) (clone[mode.key][c.name] ??= []).push(result);
    }
  }
}

// What the fan-out fetches: a full clone of the commit (both repositories, for the memory goal)
// and the shallow fetch CI checkouts make (`git fetch --depth=1 origin <sha>`).
const VARIANTS = [
  { key: 'small', repo: 'small' },
  { key: 'big', repo: 'big' },
  { key: 'big --depth 1', repo: 'big', depth: 1 },
];
const fanout = Object.fromEntries(['off', 'cold', 'warm'].map((k) => [k, Object.fromEntries(VARIANTS.map((v) => [v.key, []]))]));
const burst = (fs, v, r) => fanOut(fs, `${fs.url}/git/${v.repo}.git`, { body: fetchRequestBody({ wants: [history[v.repo][r]], depth: v.depth }), token: TOKEN, clients: cfg.clients });
async function fanoutPhase(fs, label, record) {
  try {
    progress(`fan-out warm-up (${label})`);
    await burst(fs, VARIANTS[0], cfg.fanoutRounds);
    for (let r = 0; r < cfg.fanoutRounds; r++) {
      for (const v of VARIANTS) {
        progress(`fan-out round ${r + 1}/${cfg.fanoutRounds} (${label}): ${cfg.clients} × ${v.key}`);
        await record(v, r);
      }
    }
  } catch (error) {
    failures[label] = error.message;
    log(`fan-out with ${label} FAILED: ${error.message}`);
  }
}
await fanoutPhase(serve, 'cache off', async (v, r) => fanout.off[v.key].push(await burst(serve, v, r)));

await stop(serve.child);

// ---- phase B: pack cache on (goal 2 with, 4) ----
progress('starting forgesync serve (pack cache on)');
serve = await startForgesync('2GiB');
await fanoutPhase(serve, 'cache on', async (v, r) => {
  fanout.cold[v.key].push(await burst(serve, v, r));
  fanout.warm[v.key].push(await burst(serve, v, r));
});
await stop(serve.child);
progress('');
clearInterval(loadTimer);

// ---- report ----
const x = (n) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '–');
const paired = (a = [], b = [], f) => (a.length && a.length === b.length ? median(a.map((s, i) => f(s) / f(b[i]))) : NaN);
const medianOf = (list, f) => (list.length ? median(list.map(f)) : NaN);
const cloneRatio = (mode, baseline = 'http-backend (mirror)') => paired(clone[mode].forgesync, clone[mode][baseline], (s) => s.mibPerSec);
const cpuRatio = (key) => paired(fanout.cold[key], fanout.off[key], (s) => s.cpuMsPerClone);
const lfsRatio = lfs.forgesync.length ? paired(lfs.forgesync, lfs.files, (s) => s.mibPerSec) : NaN;
const maxOf = (values) => (values.length ? Math.max(...values) : NaN);
const peak = (repo) => maxOf(['off', 'cold', 'warm'].flatMap((k) => VARIANTS.filter((v) => v.repo === repo).flatMap((v) => fanout[k][v.key].map((s) => s.peakRss))));
const rssRatio = peak('big') / peak('small');
const verdict = (ok) => (ok ? 'met' : 'MISSED');

log('');
log('Clone throughput, large repository (MiB/s of pack received; median over rounds; CPU = the server tree per clone)');
const cloneRows = [];
for (const mode of MODES) {
  for (const name of Object.keys(clone[mode.key])) {
    const samples = clone[mode.key][name];
    cloneRows.push([`${mode.key}: ${name}`, medianOf(samples, (s) => s.mibPerSec).toFixed(1), `${(medianOf(samples, (s) => s.ms) / 1000).toFixed(2)} s`, `${(medianOf(samples, (s) => s.cpuMs) / 1000).toFixed(2)} s`, mib(medianOf(samples, (s) => s.packBytes)).toFixed(1), name === 'forgesync' ? '' : x(cloneRatio(mode.key, name))]);
  }
}
log(table(['mode: server', 'MiB/s', 'wall', 'server CPU', 'pack MiB', 'forgesync ÷'], cloneRows));
log('');
log(`Fan-out: ${cfg.clients} identical fetches at once (median over ${cfg.fanoutRounds} round(s); CPU of the serve tree per clone; RSS peak of the serve process / of its tree)`);
const fanRows = [];
for (const [k, label] of [['off', 'cache off'], ['cold', 'cache on, cold'], ['warm', 'cache on, warm']]) {
  for (const { key } of VARIANTS) {
    const s = fanout[k][key];
    if (!s.length) continue;
    fanRows.push([`${key}, ${label}`, `${medianOf(s, (v) => v.cpuMsPerClone).toFixed(0)} ms`, `${(medianOf(s, (v) => v.ms) / 1000).toFixed(2)} s`, mib(medianOf(s, (v) => v.packBytes)).toFixed(1), `${mib(Math.max(...s.map((v) => v.peakRss))).toFixed(0)} MiB`, `${mib(Math.max(...s.map((v) => v.peakTreeRss))).toFixed(0)} MiB`]);
  }
}
log(table(['repository, cache', 'CPU/clone', 'burst wall', 'pack MiB', 'serve RSS peak', 'tree RSS peak'], fanRows));
// Warm bursts run no pack-objects at all: what is left is relaying the bytes (hook → upload-pack → serve → socket).
const floor = (key) => paired(fanout.warm[key], fanout.off[key], (v) => v.cpuMsPerClone);
log(`  floor (warm ÷ off, no pack generated at all): full ${x(floor('big'))}, --depth 1 ${x(floor('big --depth 1'))}: the rest is relaying the pack`);
log('');
if (lfs.forgesync.length) {
  log(`LFS downloads: ${cfg.lfsObjects} × ${cfg.lfsMiB} MiB, ${cfg.lfsConcurrency} at a time (median over rounds)`);
  log(table(['server', 'MiB/s', 'wall', 'server CPU'], Object.entries(lfs).map(([name, s]) => [name, medianOf(s, (v) => v.mibPerSec).toFixed(0), `${(medianOf(s, (v) => v.ms) / 1000).toFixed(2)} s`, `${(medianOf(s, (v) => v.cpuMs) / 1000).toFixed(2)} s`])));
} else {
  log(`LFS: NOT measured: forgesync stored ${storedLfs} of ${cfg.lfsObjects} objects after the sync (see ${join(root, 'forgesync-setup.log')}, BENCH_KEEP=1 keeps it)`);
}
log('');
const goals = [
  ['1 full clone vs http-backend', cloneRatio('full'), `≥ ${GOALS.cloneVsBackend}×`, cloneRatio('full') >= GOALS.cloneVsBackend],
  ['1 blob:none clone vs http-backend', cloneRatio('blobless'), `≥ ${GOALS.cloneVsBackend}×`, cloneRatio('blobless') >= GOALS.cloneVsBackend],
  ['  (server only: v2 fetch vs http-backend)', cloneRatio('fetch'), 'no goal', undefined],
  [`2 CPU/clone, ${cfg.clients} full clones, cache ÷ none`, cpuRatio('big'), `≤ ${GOALS.cpuWithCache}×`, cpuRatio('big') <= GOALS.cpuWithCache],
  [`2 CPU/clone, ${cfg.clients} --depth 1, cache ÷ none`, cpuRatio('big --depth 1'), `≤ ${GOALS.cpuWithCache}×`, cpuRatio('big --depth 1') <= GOALS.cpuWithCache],
  ['3 LFS download vs file server', lfsRatio, `≥ ${GOALS.lfsVsFiles}×`, lfs.forgesync.length ? lfsRatio >= GOALS.lfsVsFiles : undefined],
  ['4 serve peak RSS, large ÷ small repo', rssRatio, `≤ ${GOALS.rssLargeOverSmall}×`, rssRatio <= GOALS.rssLargeOverSmall],
];
const verdictOf = (ratio, target, ok) => (target === 'no goal' ? '' : !Number.isFinite(ratio) ? 'NOT MEASURED' : verdict(ok));
log(table(['goal', 'ratio', 'target', 'verdict'], goals.map(([g, ratio, target, ok]) => [g, x(ratio), target, verdictOf(ratio, target, ok)])));
for (const [phase, message] of Object.entries(failures)) log(`  ${phase} failed: ${message}`);
log(`  (ratios: median over rounds of the ratio within a round; 4: ${mib(peak('big')).toFixed(0)} MiB with the large repository, ${mib(peak('small')).toFixed(0)} MiB with the small one)`);
const loadAtEnd = reportLoad(loadAtStart, loadSamples, ': run it again on a quiet machine');
log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);

const missed = goals.filter(([, ratio, target, ok]) => target !== 'no goal' && (ok === false || !Number.isFinite(ratio))).map(([g]) => g.trim());
const file = writeResults('serve', { cfg, goals: GOALS, loadAtStart, loadAtEnd, mirror: packState(synced.big.mirror), view: packState(synced.big.view), clone, fanout, lfs, failures, ratios: { full: cloneRatio('full'), blobless: cloneRatio('blobless'), fetch: cloneRatio('fetch'), cpuFull: cpuRatio('big'), cpuShallow: cpuRatio('big --depth 1'), floorFull: floor('big'), floorShallow: floor('big --depth 1'), lfs: lfsRatio, rss: rssRatio }, missed });
log(`results: ${file}`);
if (cfg.strict && missed.length) {
  console.error(`goals missed: ${missed.join('; ')}`);
  process.exit(1);
}
process.exit(0);
