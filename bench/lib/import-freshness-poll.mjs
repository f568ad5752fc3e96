// The watch of bench/lib/import-freshness.mjs: changes awaited on forgesync's
// read API, each URL polled conditionally at a fixed interval while a change
// on it is outstanding.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** Keep-alive connections to the serve child (bounded: hundreds opened at once overflow the listen backlog). */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One request on the shared keep-alive agent; resolves (never rejects: status 0 on a socket error) with status, headers, body text and arrival time. */
export function request(origin, { method = 'GET', path, headers = {}, body }) {
  return new Promise((resolve) => {
    const req = http.request({ agent, host: origin.hostname, port: origin.port, method, path, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, text, at: performance.now() }));
    });
    req.on('error', (error) => resolve({ status: 0, headers: {}, text: error.message, at: performance.now() }));
    req.end(body);
  });
}

/**
 * Polls the read API for outstanding changes: each URL with a change not
 * yet seen every `intervalMs` (one request in flight per URL, the changes
 * on one URL share it), conditionally (`If-None-Match` with the URL's last
 * ETag: an unchanged object answers 304 without a body). A change is seen
 * at the arrival of the first answer whose status and body pass its check;
 * so a figure is late by at most the interval plus one answer's time.
 */
export class Poller {
  /** path → { etag, inFlight, lastAt, changes } */
  #urls = new Map();
  #timer;
  #totals = { polls: 0, notModified: 0, gapSumMs: 0, gaps: 0, answerSumMs: 0, slowAnswers: 0 };

  constructor(origin, adminToken, intervalMs) {
    this.origin = origin;
    this.auth = `Bearer ${adminToken}`;
    this.intervalMs = intervalMs;
    this.#timer = setInterval(() => this.#tick(), Math.max(1, Math.floor(intervalMs / 4)));
  }

  /** Resolves with ms from `sentAt` to the change seen on `path` (`check(status, body)` true), or null after `giveUpMs`. */
  watch(path, check, sentAt, giveUpMs) {
    return new Promise((resolve) => {
      let entry = this.#urls.get(path);
      if (!entry) this.#urls.set(path, (entry = { etag: undefined, inFlight: false, lastAt: -Infinity, changes: [] }));
      const change = { check, sentAt, resolve, timer: undefined };
      change.timer = setTimeout(() => {
        entry.changes = entry.changes.filter((other) => other !== change);
        resolve(null);
      }, giveUpMs);
      entry.changes.push(change);
    });
  }

  /** The poll counters now, to subtract later (since()). */
  snapshot() {
    return { ...this.#totals };
  }

  /** Polls since `snapshot`: how many, how many answered 304, the mean gap between two polls of one URL, the mean answer time and the answers slower than 100 ms. */
  since(snapshot) {
    const polls = this.#totals.polls - snapshot.polls;
    const gaps = this.#totals.gaps - snapshot.gaps;
    return {
      polls,
      notModified: this.#totals.notModified - snapshot.notModified,
      meanGapMs: gaps ? (this.#totals.gapSumMs - snapshot.gapSumMs) / gaps : null,
      meanAnswerMs: polls ? (this.#totals.answerSumMs - snapshot.answerSumMs) / polls : null,
      answersOver100Ms: this.#totals.slowAnswers - snapshot.slowAnswers,
    };
  }

  close() {
    clearInterval(this.#timer);
  }

  #tick() {
    const now = performance.now();
    for (const [path, entry] of this.#urls) {
      if (entry.changes.length === 0 && !entry.inFlight) {
        this.#urls.delete(path);
        continue;
      }
      if (!entry.inFlight && now - entry.lastAt >= this.intervalMs) void this.#poll(path, entry, now);
    }
  }

  async #poll(path, entry, now) {
    if (entry.lastAt !== -Infinity) {
      this.#totals.gapSumMs += now - entry.lastAt;
      this.#totals.gaps++;
    }
    entry.inFlight = true;
    entry.lastAt = now;
    const headers = { authorization: this.auth, ...(entry.etag ? { 'if-none-match': entry.etag } : {}) };
    const answer = await request(this.origin, { path, headers });
    entry.inFlight = false;
    this.#totals.polls++;
    this.#totals.answerSumMs += answer.at - now;
    if (answer.at - now > 100) this.#totals.slowAnswers++;
    if (answer.status === 304) {
      this.#totals.notModified++;
      return;
    }
    entry.etag = answer.status === 200 ? answer.headers.etag : undefined;
    let body;
    try {
      body = answer.status === 200 ? JSON.parse(answer.text) : undefined;
    } catch {
      body = undefined;
    }
    entry.changes = entry.changes.filter((change) => {
      if (!change.check(answer.status, body ?? {})) return true;
      clearTimeout(change.timer);
      change.resolve(answer.at - change.sentAt);
      return false;
    });
  }
}
