import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { Forgesync } from '../../src/app/forgesync.js';
import type { CloudEvent } from '../../src/feeds/events.js';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, type CapturedLogs, type TestDatabase } from '../replication/harness.js';
import { WebhookReceiver } from './sinks/http-receiver.js';

/** Events of `type` prefix for `subject`, in arrival order. */
function refEvents(receiver: WebhookReceiver, source: string, ref: string): CloudEvent[] {
  return receiver.accepted.map((entry) => entry.event).filter((event) => event.type.startsWith('dev.forgesync.ref.') && (event.data as { source: string }).source === source && event.subject === ref);
}

/** The commits a ref went through, as its events say, duplicates (same id) collapsed. */
function history(events: CloudEvent[]): string[] {
  const seen = new Set<string>();
  const afters: string[] = [];
  for (const event of events) {
    if (seen.has(event.id)) continue;
    seen.add(event.id);
    afters.push((event.data as { after: string }).after);
  }
  return afters;
}

/**
 * The feeds end to end on one registry database: real upstream
 * repositories, real syncs, a real HTTP receiver verifying Standard
 * Webhooks signatures with the `standardwebhooks` package.
 */
export function describeFeeds(kind: 'sqlite' | 'postgres'): void {
  describe(`feeds on ${kind}`, () => {
    let database: TestDatabase;
    let app: Forgesync;
    let logs: CapturedLogs;
    let receiver: WebhookReceiver;
    const secretEnv = `FORGESYNC_TEST_FEED_SECRET_${kind.toUpperCase()}`;
    const secret = `whsec_${Buffer.from(testSecret('FEED_KEY')).toString('base64')}`;

    beforeAll(async () => {
      process.env[secretEnv] = secret;
      database = await createTestDatabase(kind);
      receiver = await WebhookReceiver.start();
      receiver.verifier = new Webhook(secret);
      const config = testConfig(database.url, { FORGESYNC_FEED_RETRY_BASE: '50ms', FORGESYNC_FEED_RETRY_MAX: '200ms', FORGESYNC_FEED_POLL_INTERVAL: '100ms', FORGESYNC_FEED_MAX_ATTEMPTS: '3' });
      ({ app, logs } = await openTestForgesync(config));
      await app.startService();
    });

    afterAll(async () => {
      await app?.close();
      await receiver?.stop();
      await database?.drop();
    });

    it('delivers every ref change of a sequence of pushes, in order per ref, signed', async () => {
      const upstream = Upstream.create();
      await app.addSource({ name: 'pushes', url: upstream.bare });
      await app.syncAndWait('pushes');
      await app.feeds.add({ name: 'all', sink: receiver.url('/all'), secretEnv, sources: 'pushes' });
      const expected: string[] = [];
      for (let i = 0; i < 6; i++) {
        expected.push(upstream.commit('main'));
        if (i % 2 === 0) upstream.commit('topic');
        await app.syncAndWait('pushes');
      }
      upstream.deleteBranch('topic');
      await app.syncAndWait('pushes');
      await eventually('the feed to catch up', async () => (await app.feeds.status('all')).lag.changes === 0 && (await app.feeds.status('all')).fullSync.requested === false).catch(async (e) => { console.log(JSON.stringify(await app.feeds.status('all')), logs.lines.filter((l) => (l.level as number) >= 40 || String(l.event).startsWith('feed')).slice(-10)); throw e; });
      const main = refEvents(receiver, 'pushes', 'refs/heads/main');
      // The full sync's state of main first (the first commit), then each push in order.
      expect(history(main).slice(-expected.length)).toEqual(expected);
      const topic = refEvents(receiver, 'pushes', 'refs/heads/topic');
      expect(topic.at(-1)!.type).toBe('dev.forgesync.ref.deleted');
      expect(topic[0]!.type).toBe('dev.forgesync.ref.created');
      for (const event of main) {
        expect(event).toMatchObject({ specversion: '1.0', datacontenttype: 'application/json' });
        expect(event.source).toMatch(/^forgesync:\/\/[^/]+\/replication\/pushes$/);
        expect(event.sequence).toMatch(/^\d{20}$/);
      }
      expect(receiver.rejectedSignatures).toEqual([]);
      const status = await app.feeds.status('all');
      expect(status).toMatchObject({ ackedSeq: status.headSeq, deadLetters: 0, retrying: 0, holder: null });
      expect(status.sink).not.toContain(secret);
    });
  });
}
