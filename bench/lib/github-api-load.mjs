// The clients of bench/github-api.mjs: a mixed read workload (the URLs, drawn
// once from a seeded generator, so both servers get the very same requests),
// its throughput with a fixed number of keep-alive connections, and the latency
// of one URL asked again and again by a single client.

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { prng } from './github-api-random.mjs';

/**
 * Inputs: the seeded data (issue and pull numbers, logins), how many URLs, a
 * seed. Returns paths below `/repos/{owner}/{repo}`: list filters and orders
 * (pages spread over each list), single issues and pulls, their comments.
 */
export function workloadPaths({ issueNumbers, pullNumbers, logins, labels, issuePages }, count, seed = 1) {
  const random = prng(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const page = (pages) => 1 + Math.floor(random() * pages);
  const kinds = [
    () => `/issues?state=all&per_page=100&page=${page(issuePages)}`,
    () => `/issues?per_page=30&page=${page(20)}`,
    () => `/issues?state=all&sort=updated&direction=asc&per_page=50&page=${page(40)}`,
    () => `/issues?state=all&labels=${encodeURIComponent(pick(labels))}&per_page=30`,
    () => `/issues?state=all&milestone=*&sort=comments&per_page=30`,
    () => `/issues?state=all&creator=${pick(logins)}&per_page=30`,
    () => `/issues?state=all&assignee=none&per_page=30&page=${page(10)}`,
    () => `/pulls?state=all&per_page=50&page=${page(20)}`,
    () => `/pulls?state=closed&sort=popularity&direction=desc&per_page=30`,
    () => `/issues/${pick(issueNumbers)}`,
    () => `/issues/${pick(issueNumbers)}/comments`,
    () => `/pulls/${pick(pullNumbers)}`,
    () => `/issues/comments?per_page=100&page=${page(100)}`,
    () => '/labels',
    () => '/milestones?state=all',
  ];
  return Array.from({ length: count }, () => pick(kinds)());
}

/** One GET on a keep-alive agent; resolves with the status once the body is read. */
function get(agent, base, path, headers) {
  return new Promise((resolve, reject) => {
    const url = new URL(base + path);
    const request = http.get({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, headers }, (response) => {
      response.on('data', () => {});
      response.on('end', () => resolve(response.statusCode));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/**
 * `connections` clients, each asking the next URL of `paths` (round robin)
 * until `seconds` have passed. Returns { perSecond, requests, failed } (a
 * status other than 200 counts as failed, and is reported by the caller).
 */
export async function throughput({ base, headers }, paths, { connections, seconds }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  let requests = 0;
  let failed = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  const client = async () => {
    while (performance.now() < until) {
      const status = await get(agent, base, paths[next++ % paths.length], headers);
      requests++;
      if (status !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  return { perSecond: requests / elapsed, requests, failed };
}

/** Each URL once (warms the servers' caches; checks they answer 200). Returns the paths that did not. */
export async function warm({ base, headers }, paths, connections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const bad = [];
  let next = 0;
  const client = async () => {
    while (next < paths.length) {
      const path = paths[next++];
      if ((await get(agent, base, path, headers)) !== 200) bad.push(path);
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  agent.destroy();
  return bad;
}

/** The q-quantile (0…1) of `values`, nearest rank. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * Latency of each of `paths` asked `samples` times by one client, the paths
 * interleaved (so drift hits all alike), after `warmup` rounds not kept;
 * with `vary`, each round's URL gets `&sample=<round>` (a parameter the
 * servers ignore), so no answer remembered by URL serves it. Returns per
 * path { p50, p99 } in milliseconds.
 */
export async function latencies({ base, headers }, paths, { samples, warmup, vary = false }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times = paths.map(() => []);
  for (let round = 0; round < warmup + samples; round++) {
    for (const [index, path] of paths.entries()) {
      const started = performance.now();
      const url = vary ? `${path}&sample=${round}` : path;
      const status = await get(agent, base, url, headers);
      if (status !== 200) throw new Error(`GET ${base}${url}: ${status}`);
      if (round >= warmup) times[index].push(performance.now() - started);
    }
  }
  agent.destroy();
  return times.map((list) => ({ p50: quantile(list, 0.5), p99: quantile(list, 0.99) }));
}
