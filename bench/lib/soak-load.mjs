// The steady load of bench/soak.mjs: every kind of work forgesync does,
// each on its own timer at a moderate fixed rate, none waiting for the
// others. A driver never throws: a failure is counted (and its first
// messages kept) so that an hour's run reports it instead of stopping.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { addCommit, git } from './git-fleet.mjs';
import { request } from './import-freshness-poll.mjs';
import { pushDelivery } from './push-delivery.mjs';

/** Milliseconds between two actions of each driver (the rates the report states). */
export const PERIODS_MS = {
  push: 3_000, // a commit on the next upstream + its signed push webhook: 20 a minute, each source once a minute
  importChange: 6_000, // an issue edit (4 in 5) or a new comment on the fake GitHub + its deliveries: 10 a minute
  clone: 20_000, // a full clone over smart HTTP, removed afterwards: 3 a minute
  fetch: 20_000, // a fetch into a kept clone of the next source: 3 a minute
  snapshot: 30_000, // a snapshot of main through the API, then its hold released: 2 a minute
  reads: 5_000, // dashboard page + sources, feeds, imports, activity lists: 5 requests every 5 s
};

/** An admin request on forgesync; the answer (status 0 on a socket error). */
function call(ctx, method, path, body) {
  const headers = { authorization: `Bearer ${ctx.admin}`, ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}) };
  return request(ctx.origin, { method, path, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/**
 * Starts every driver. `ctx`: origin (URL), admin, hookSecret, sources
 * ([{ name, upstream }]), site ({ fake, upstream, issueNumbers, titles }),
 * scratch (a directory for clones). Returns { counts, errors, stop() }.
 */
export function startLoad(ctx) {
  const counts = { pushes: 0, importChanges: 0, clones: 0, fetches: 0, snapshots: 0, reads: 0, failures: 0 };
  const errors = [];
  const fail = (what, error) => {
    counts.failures++;
    if (errors.length < 20) errors.push(`${what}: ${String(error?.message ?? error).slice(0, 200)}`);
  };
  const cursor = { push: 0, fetch: 0, clone: 0, snapshot: 0, seq: 0 };
  const next = (key) => ctx.sources[cursor[key]++ % ctx.sources.length];
  const gitAuth = ['-c', `http.extraHeader=Authorization: Bearer ${ctx.admin}`];
  const gitUrl = (name) => new URL(`/git/${name}.git`, ctx.origin).href;
  const kept = new Map(); // source name → a clone kept for fetches

  const drivers = {
    async push() {
      const source = next('push');
      await addCommit(source.upstream, `soak ${++cursor.seq}`);
      const { body, headers } = pushDelivery(ctx.hookSecret, source.upstream, `soak/${source.name}`);
      const answer = await request(ctx.origin, { method: 'POST', path: '/hooks/github', headers, body });
      if (answer.status !== 202) throw new Error(`push webhook answered ${answer.status}: ${answer.text.slice(0, 120)}`);
      counts.pushes++;
    },
    async importChange() {
      const { site } = ctx;
      const seq = ++cursor.seq;
      const number = site.issueNumbers[seq % site.issueNumbers.length];
      // Titles are replaced (never grown); comments add to the copy, which is retained data.
      const { planned } = seq % 5 === 0 ? await site.upstream.comment(number, `soak remark ${seq}`, { deliver: false }) : await site.upstream.editIssue(number, { title: `${site.titles.get(number)} [soak ${seq}]` }, { deliver: false });
      for (const { event, payload } of planned) {
        const built = site.upstream.buildDelivery(event, payload, ctx.hookSecret);
        const answer = await request(ctx.origin, { method: 'POST', path: '/hooks/github', headers: built.headers, body: built.body });
        if (answer.status !== 202) throw new Error(`${event} delivery answered ${answer.status}: ${answer.text.slice(0, 120)}`);
      }
      counts.importChanges++;
    },
    async clone() {
      const source = next('clone');
      const dir = mkdtempSync(join(ctx.scratch, 'clone-'));
      try {
        await git([...gitAuth, 'clone', '--quiet', '--bare', gitUrl(source.name), join(dir, 'c.git')]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      counts.clones++;
    },
    async fetch() {
      const source = next('fetch');
      let dir = kept.get(source.name);
      if (!dir) {
        dir = join(ctx.scratch, `kept-${source.name}.git`);
        await git([...gitAuth, 'clone', '--quiet', '--bare', gitUrl(source.name), dir]);
        kept.set(source.name, dir);
      } else {
        await git([...gitAuth, `--git-dir=${dir}`, 'fetch', '--quiet', gitUrl(source.name), '+refs/heads/*:refs/heads/*']);
      }
      counts.fetches++;
    },
    async snapshot() {
      const source = next('snapshot');
      const made = await call(ctx, 'POST', `/api/sources/${source.name}/snapshots`, { ref: 'main' });
      if (made.status !== 201) throw new Error(`snapshot of ${source.name} answered ${made.status}: ${made.text.slice(0, 120)}`);
      const { handle } = JSON.parse(made.text);
      const released = await call(ctx, 'DELETE', `/api/snapshots/${handle}`);
      if (released.status >= 300) throw new Error(`release of snapshot ${handle} answered ${released.status}`);
      counts.snapshots++;
    },
    async reads() {
      for (const path of ['/dashboard/', '/api/sources', '/api/feeds', '/api/imports', '/api/activity/failures']) {
        const answer = await call(ctx, 'GET', path);
        if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}`);
        counts.reads++;
      }
    },
  };

  // One timer per driver; an action still running when its next is due is skipped (the rate is a ceiling, never a pile-up).
  const timers = [];
  const running = new Set();
  for (const [name, action] of Object.entries(drivers)) {
    let busy = false;
    const tick = () => {
      if (busy) return;
      busy = true;
      const done = action()
        .catch((error) => fail(name, error))
        .finally(() => {
          busy = false;
          running.delete(done);
        });
      running.add(done);
    };
    timers.push(setInterval(tick, PERIODS_MS[name]));
  }
  return {
    counts,
    errors,
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([...running]);
    },
  };
}
