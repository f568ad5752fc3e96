// The clients of bench/github-api.mjs: a mixed read workload (the requests,
// drawn once from a seeded generator, so both servers get the very same ones),
// its throughput with a fixed number of keep-alive connections, and the latency
// of one URL asked again and again by a single client.
//
// A workload entry is a path below `/repos/{owner}/{repo}` (a GET), or a
// GraphQL entry `{ graphql: name }`: each server says what it asks for it
// (`server.graphql[name]`: a POST of `{ url, body }` on the copy; on the fake,
// which has no GraphQL, the REST path that answers the same data).

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { prng } from './github-api-random.mjs';

/**
 * Inputs: the seeded data (issue and pull numbers, logins), the contents
 * paths and GraphQL entry names to mix in (none: REST lists and objects
 * only), how many entries, a seed. Returns workload entries: paths below
 * `/repos/{owner}/{repo}` (list filters and orders with pages spread over
 * each list, single issues and pulls, their comments), one in 15 a contents
 * path when given, and one in 10 a GraphQL entry when given (what a team
 * using gh asks: gh sends its two requests per `gh issue list`, so the
 * names alternate). The REST entries drawn are the same with or without
 * the others.
 */
export function workloadPaths({ issueNumbers, pullNumbers, logins, labels, issuePages, contents = [], graphql = [] }, count, seed = 1) {
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
  return Array.from({ length: count }, (_, i) => {
    const drawn = pick(kinds)();
    // i % 15 === 0 ends in 0 or 5, never in 3: the two never take the same slot.
    if (graphql.length > 0 && i % 10 === 3) return { graphql: graphql[Math.floor(i / 10) % graphql.length] };
    if (contents.length > 0 && i % 15 === 0) return contents[Math.floor(i / 15) % contents.length];
    return drawn;
  });
}

/**
 * One request on a keep-alive agent; resolves once the body is read with
 * its status, and with the body's text when `keepBody` (else undefined).
 */
function send(agent, { method, url: target, headers, body }, keepBody) {
  return new Promise((resolve, reject) => {
    const url = new URL(target);
    const request = http.request({ agent, method, host: url.hostname, port: url.port, path: url.pathname + url.search, headers }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => keepBody && chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode, text: keepBody ? Buffer.concat(chunks).toString('utf8') : undefined }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** The request `server` makes of workload `entry` (see the top of this file). */
export function requestOf(server, entry) {
  if (typeof entry === 'string') return { method: 'GET', url: server.base + entry, headers: server.headers };
  const asked = server.graphql?.[entry.graphql];
  if (asked === undefined) throw new Error(`no request for GraphQL entry ${entry.graphql}`);
  if (typeof asked === 'string') return { method: 'GET', url: server.base + asked, headers: server.headers };
  return { method: 'POST', url: asked.url, headers: { ...server.headers, 'content-type': 'application/json' }, body: asked.body };
}

/** A workload entry as text (for warnings). */
export const entryText = (entry) => (typeof entry === 'string' ? entry : `GraphQL ${entry.graphql}`);

/** GET `path` below `base`; resolves with the status. */
async function get(agent, base, path, headers) {
  return (await send(agent, { method: 'GET', url: base + path, headers })).status;
}

/**
 * `connections` clients, each asking the next URL of `paths` (round robin)
 * until `seconds` have passed. Returns { perSecond, requests, failed } (a
 * status other than 200 counts as failed, and is reported by the caller).
 */
export async function throughput(server, paths, { connections, seconds }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  let requests = 0;
  let failed = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  const client = async () => {
    while (performance.now() < until) {
      const { status } = await send(agent, requestOf(server, paths[next++ % paths.length]));
      requests++;
      if (status !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  return { perSecond: requests / elapsed, requests, failed };
}

/**
 * Each entry once (warms the servers' caches; checks they answer 200, and a
 * GraphQL POST without `errors`). Returns the entries that did not.
 */
export async function warm(server, paths, connections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const bad = [];
  let next = 0;
  const client = async () => {
    while (next < paths.length) {
      const path = paths[next++];
      const request = requestOf(server, path);
      const { status, text } = await send(agent, request, request.method === 'POST');
      if (status !== 200 || (text !== undefined && (JSON.parse(text).errors ?? []).length > 0)) bad.push(path);
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
