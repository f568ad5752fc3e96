import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { eventually, refsOf } from '../../support/harness.js';
import { Upstream } from '../../support/upstream.js';
import { startTestServer } from '../../support/test-server.js';
import { githubDelivery, githubExample, WEBHOOK_ENV } from './fixtures.js';
import { replicationStores } from '../../support/stores.js';

const DELIVERIES = 300;
/** Deliveries before which a new commit lands upstream (the last one just before the last delivery). */
const COMMIT_AT = new Set([0, 150, DELIVERIES - 1]);

describe('a webhook storm', () => {
  it(`${DELIVERIES} signed pushes for one repository collapse into a few fetches, and the mirror ends with the last push`, async () => {
    const t = await startTestServer({ env: WEBHOOK_ENV, service: true });
    const upstream = Upstream.create();
    try {
      const added = await t.app.replication.addSource({ url: upstream.bare, name: 'stormy' });
      await eventually('first sync', async () => (await t.app.replication.getSource('stormy')).registry.state === 'synced');
      const stormStart = new Date();

      // The real push payload, its clone URL pointed at the local upstream.
      const payload = githubExample('push');
      payload.repository = { ...(payload.repository as object), clone_url: `file://${upstream.bare}` };
      const delivery = githubDelivery('push', payload);

      const responses = [];
      let commits = 0;
      for (let i = 0; i < DELIVERIES; i++) {
        if (COMMIT_AT.has(i)) {
          upstream.commit('main');
          commits++;
        }
        responses.push(t.server.inject(delivery));
        if (i % 5 === 4) await sleep(1); // let syncs run while the storm goes on
      }
      const answered = await Promise.all(responses);
      expect(answered.map((r) => r.statusCode)).toEqual(Array(DELIVERIES).fill(202));
      expect(new Set(answered.map((r) => r.json().result))).toEqual(new Set(['accepted']));

      const requested = (await t.app.replication.getSource('stormy')).registry.requestedSeq;
      expect(requested).toBe(added.registry.requestedSeq + DELIVERIES);
      const done = await eventually('the storm to be served', async () => {
        const s = await t.app.replication.getSource('stormy');
        return s.registry.state === 'synced' && s.registry.completedSeq >= requested ? s : null;
      });
      expect(refsOf(done.registry.mirrorPath!)).toBe(refsOf(upstream.bare));

      const attempts = (await replicationStores(t.app).registry.attempts(done.id, 10 * DELIVERIES)).filter((a) => a.startedAt >= stormStart);
      const fetches = attempts.filter((a) => a.result === 'synced').length;
      // Each commit can cost at most one fetch. A no-op round (the upstream's refs read from its
      // files) costs about a millisecond, so requests are served round by round rather than
      // pooled, but never more than one round per request.
      expect(fetches).toBeGreaterThanOrEqual(1);
      expect(fetches).toBeLessThanOrEqual(commits);
      expect(attempts.length).toBeLessThanOrEqual(DELIVERIES);
      expect(attempts.every((a) => a.result === 'synced' || a.result === 'noop')).toBe(true);
    } finally {
      await t.close();
    }
  });
});
