// The timed parts of bench/serve.mjs: clone rounds, fan-out rounds and LFS
// download rounds. Each function measures one round of one contender.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { collectGarbage } from './harness.mjs';
import { gitClone, fetchPack } from './serve-clients.mjs';
import { batchDownloads, downloadAll } from './serve-lfs.mjs';
import { childrenReaped, cpuTreeMs, sampleRss } from './serve-procs.mjs';
import { gitRaw } from './snapshots-measure.mjs';

let cloneCounter = 0;

/**
 * One `git clone --bare` of `contender.url` into a new directory under
 * `scratch` (deleted afterwards, not timed): wall time, the pack bytes that
 * arrived (the clone's pack files on disk), the serving process tree's CPU.
 * With `expectTip` the clone's HEAD is checked.
 */
export async function cloneOnce(contender, { scratch, filter, token, expectTip }) {
  const dir = join(scratch, `clone-${++cloneCounter}`);
  collectGarbage();
  const cpu0 = cpuTreeMs(contender.pid);
  const { ms } = await gitClone(contender.url, dir, { filter, token });
  await childrenReaped(contender.pid);
  const cpuMs = cpuTreeMs(contender.pid) - cpu0;
  const sizes = (await gitRaw(['-C', dir, 'count-objects', '-v'])).split('\n').filter((l) => l.startsWith('size-pack:'));
  const packBytes = Number(sizes[0]?.split(': ')[1] ?? 0) * 1024;
  if (expectTip) {
    const head = (await gitRaw(['-C', dir, 'rev-parse', 'HEAD'])).trim();
    if (head !== expectTip) throw new Error(`a clone from ${contender.name} has HEAD ${head}, expected ${expectTip}`);
  }
  rmSync(dir, { recursive: true, force: true });
  return { ms, cpuMs, packBytes, mibPerSec: packBytes / (1024 * 1024) / (ms / 1000) };
}

/** One v2 fetch of `body` (server-side throughput: nothing written on this side). */
export async function fetchOnce(contender, { body, token }) {
  collectGarbage();
  const cpu0 = cpuTreeMs(contender.pid);
  const { ms, packBytes } = await fetchPack(contender.repoUrl, { body, token });
  await childrenReaped(contender.pid);
  return { ms, cpuMs: cpuTreeMs(contender.pid) - cpu0, packBytes, mibPerSec: packBytes / (1024 * 1024) / (ms / 1000) };
}

/**
 * `clients` identical v2 fetches at once against forgesync (`serve` the
 * child process, `repoUrl` the repository): the serving tree's CPU from
 * before the first request to after the last upload-pack was reaped, per
 * clone; the peak resident set of the serve process (and of its tree)
 * sampled every 50 ms meanwhile; the wall time of the whole burst.
 */
export async function fanOut(serve, repoUrl, { body, token, clients }) {
  collectGarbage();
  const pid = serve.child.pid;
  const sampler = sampleRss(pid, 50);
  const cpu0 = cpuTreeMs(pid);
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: clients }, () => fetchPack(repoUrl, { body, token })));
  const ms = performance.now() - started;
  await childrenReaped(pid);
  const cpuMs = cpuTreeMs(pid) - cpu0;
  const rss = sampler.stop();
  // Without the cache the packs may differ by a few bytes: pack-objects' threaded delta search is not deterministic.
  const sizes = results.map((r) => r.packBytes);
  return { ms, cpuMsPerClone: cpuMs / clients, packBytes: Math.min(...sizes), packBytesMax: Math.max(...sizes), peakRss: rss.peakSelf, peakTreeRss: rss.peakTree, rssSamples: rss.samples };
}

/**
 * Downloads every object once, `concurrency` at a time: from forgesync
 * (one batch request, then the hrefs it gave, authenticated) or from the
 * plain file server (`GET /<oid>`). Timed from the first request to the
 * last byte; the server tree's CPU alongside.
 */
export async function lfsRound(contender, objects, { concurrency, verify }) {
  collectGarbage();
  const cpu0 = cpuTreeMs(contender.pid);
  const started = performance.now();
  const items =
    contender.kind === 'forgesync'
      ? await batchDownloads(contender.repoUrl, objects, contender.authorization)
      : objects.map(({ oid, size }) => ({ href: `${contender.url}/${oid}`, headers: {}, size, oid }));
  const bytes = await downloadAll(items, { concurrency, verify });
  const ms = performance.now() - started;
  return { ms, cpuMs: cpuTreeMs(contender.pid) - cpu0, bytes, mibPerSec: bytes / (1024 * 1024) / (ms / 1000) };
}
