// The load generator of bench/webhooks.mjs: signed deliveries over keep-alive
// HTTP/1.1 from this process, open-loop at a fixed rate or closed-loop
// unthrottled, with per-request latency.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** POSTs one delivery; resolves with status, whether it was accepted, and latency (ms from send to last byte). */
function send(agent, target, item, accepted) {
  return new Promise((resolve) => {
    const started = performance.now();
    const request = http.request(
      { agent, host: target.hostname, port: target.port, method: 'POST', path: target.pathname, headers: item.headers },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode, ok: accepted(response.statusCode, body), ms: performance.now() - started }),
        );
      },
    );
    request.on('error', (error) => resolve({ status: 0, ok: false, ms: performance.now() - started, error: error.code ?? error.message }));
    request.end(item.body);
  });
}

/** Nearest-rank percentile `p` (0–100) of the ascending `sorted`. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * One stage: `count` deliveries (items[i % items.length]) to `url`, at
 * `rate` per second (open loop: request i is issued at t0 + i/rate, at most
 * `maxInflight` outstanding, over `concurrency` keep-alive connections) or,
 * with rate null, as fast as `concurrency` connections allow (closed loop). Stops sending after `maxMs`.
 * `accepted(status, body)` decides what counts as accepted.
 */
export async function runStage({ url, items, count, rate, concurrency = 64, maxInflight = 512, maxMs = 15_000, accepted, onProgress }) {
  const target = new URL(url);
  // A bounded pool of keep-alive connections in both modes: opening hundreds of
  // connections at once overflows the listen backlog, and the dropped SYNs come
  // back after 1 s, 3 s, 7 s — measuring TCP's retransmission timer, not the server.
  // Open-loop requests beyond the pool wait in the agent's queue (counted in their latency).
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const results = [];
  const t0 = performance.now();
  let sent = 0;
  let inflight = 0;
  const pending = new Set();
  const launch = () => {
    const item = items[sent++ % items.length];
    inflight++;
    const issuedAt = performance.now() - t0;
    const p = send(agent, target, item, accepted).then((r) => {
      inflight--;
      r.end = performance.now();
      r.issuedAt = issuedAt;
      results.push(r);
      pending.delete(p);
    });
    pending.add(p);
    return p;
  };
  if (rate) {
    while (sent < count && performance.now() - t0 < maxMs) {
      const due = Math.min(count, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
      while (sent < due && inflight < maxInflight) launch();
      onProgress?.(sent);
      await sleep(1);
    }
    await Promise.all(pending);
  } else {
    const worker = async () => {
      while (sent < count && performance.now() - t0 < maxMs) await launch();
    };
    const progress = setInterval(() => onProgress?.(sent), 200);
    await Promise.all(Array.from({ length: concurrency }, worker));
    clearInterval(progress);
  }
  agent.destroy();
  const elapsedMs = Math.max(...results.map((r) => r.end)) - t0;
  const latencies = results.map((r) => r.ms).sort((a, b) => a - b);
  const ok = results.filter((r) => r.ok).length;
  const statuses = {};
  for (const r of results) statuses[r.error ?? r.status] = (statuses[r.error ?? r.status] ?? 0) + 1;
  return {
    target: rate ?? 'unthrottled',
    sent,
    completed: results.length,
    accepted: ok,
    statuses,
    elapsedMs,
    acceptedPerSec: (ok * 1000) / elapsedMs,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? NaN,
    slowest: results
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5)
      .map((r) => ({ ms: Math.round(r.ms), issuedAtMs: Math.round(r.issuedAt) })),
  };
}
