import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { eventually } from '../support/harness.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { WebhookReceiver } from './sinks/http-receiver.js';

describe('/api/feeds and the feed metrics', () => {
  let t: TestServer;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    t = await startTestServer({ service: true, tokens: { read: testSecret('FEED_READ_TOKEN') }, env: { FORGESYNC_FEED_POLL_INTERVAL: '10m', FORGESYNC_FEED_RETRY_BASE: '50ms', FORGESYNC_FEED_MAX_ATTEMPTS: '2' } });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  it('adds, lists, reports, pauses, resumes, resyncs and removes a feed', async () => {
    const upstream = Upstream.create();
    await t.app.replication.addSource({ name: 'api-src', url: upstream.bare });
    await t.app.replication.sync('api-src');
    const added = await t.server.inject({ method: 'POST', url: '/api/feeds', headers: t.auth(), payload: { name: 'api', sink: receiver.url('/api'), sources: 'api-src' } });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({ name: 'api', fullSync: { requested: true } });
    const caught = await eventually('the feed to catch up', async () => {
      const status = (await t.server.inject({ url: '/api/feeds/api', headers: t.auth(t.tokens.read) })).json();
      return status.lag.changes === 0 && !status.fullSync.requested ? status : null;
    });
    expect(caught.lastRun).toMatchObject({ operation: 'full sync', outcome: 'delivered' });
    upstream.commit('main');
    await t.app.replication.sync('api-src');
    // The poll is ten minutes away: the sync's nudge is what delivers it.
    await eventually('the change to arrive', () => receiver.accepted.some((entry) => entry.event.type === 'dev.forgesync.ref.updated'), 5000);

    const list = await t.server.inject({ url: '/api/feeds', headers: t.auth(t.tokens.read) });
    expect(list.json().map((feed: { name: string }) => feed.name)).toEqual(['api']);
    // Read-only tokens read, never change.
    expect((await t.server.inject({ method: 'POST', url: '/api/feeds/api/pause', headers: t.auth(t.tokens.read) })).statusCode).toBe(403);
    const paused = await t.server.inject({ method: 'POST', url: '/api/feeds/api/pause', headers: t.auth() });
    expect(paused.statusCode).toBe(202);
    expect(paused.json().paused).toBe(true);
    expect((await t.server.inject({ method: 'POST', url: '/api/feeds/api/resume', headers: t.auth() })).json().paused).toBe(false);
    expect((await t.server.inject({ method: 'POST', url: '/api/feeds/api/resync', headers: t.auth() })).json().fullSync.requested).toBe(true);
    expect((await t.server.inject({ method: 'POST', url: '/api/feeds/api/replay', headers: t.auth(), payload: { fromSeq: 0 } })).statusCode).toBe(400);
    expect((await t.server.inject({ url: '/api/feeds/api/dead-letters', headers: t.auth() })).json()).toEqual([]);
    expect((await t.server.inject({ url: '/api/feeds/nope', headers: t.auth() })).statusCode).toBe(404);
    const bad = await t.server.inject({ method: 'POST', url: '/api/feeds', headers: t.auth(), payload: { name: 'bad', sink: 'ftp://example.com/' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/scheme/i);

    const metrics = (await t.server.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/forgesync_feed_delivered_total\{feed="api",operation="full sync"\} [1-9]/);
    expect(metrics).toMatch(/forgesync_feed_delivered_total\{feed="api",operation="partial sync"\} [1-9]/);
    expect(metrics).toMatch(/forgesync_feed_lag_changes\{feed="api"\} \d/);
    expect(metrics).toMatch(/forgesync_feed_dead_letters\{feed="api"\} 0/);
    expect(metrics).toContain('# TYPE forgesync_feed_skips_total counter');

    expect((await t.server.inject({ method: 'DELETE', url: '/api/feeds/api', headers: t.auth() })).statusCode).toBe(204);
    expect((await t.server.inject({ url: '/api/feeds', headers: t.auth() })).json()).toEqual([]);
  });
});
