// Deliveries that arrive together are recorded in one statement (a group
// commit, replication/webhooks/match-batcher.ts), which runs in the context
// of the batch's first delivery. The job each source's sync goes through
// must still continue the trace of the delivery that named that source, not
// the first one's. Here signed GitHub push deliveries for several sources are
// posted at once to a listening `forgesync serve` in this process, so that
// some are recorded together; every `send sync` span queued by a delivery is
// in the trace of the delivery whose intake named its source. Spans go to a
// real OTLP/HTTP receiver.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/replication/webhooks/signature.js';
import { startTracing, stopTracing } from '../../src/tracing/index.js';
import { testSecret } from '../support/secrets.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { Upstream } from '../support/upstream.js';
import { OtlpReceiver, type ReceivedSpan } from './receiver.js';

const SOURCES = ['first', 'second', 'third', 'fourth'];
const WEBHOOK_SECRET = testSecret('TRACING_BATCH_WEBHOOK_SECRET');

describe('deliveries recorded in one batch', () => {
  let receiver: OtlpReceiver;
  let t: TestServer | undefined;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' });
    expect(await startTracing()).toBe(true);
  });

  afterAll(async () => {
    await t?.close();
    await stopTracing();
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    await receiver?.close();
  });

  it('queue each source’s sync under the trace of the delivery that named it', async () => {
    t = await startTestServer({ listen: true, env: { FORGESYNC_GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET } });
    const upstreams = new Map<string, Upstream>();
    const ids = new Map<string, string>();
    for (const name of SOURCES) {
      const upstream = Upstream.create();
      upstreams.set(name, upstream);
      const source = await t.app.replication.addSource({ name, url: upstream.bare });
      ids.set(name, String(source.id));
      expect((await t.app.replication.sync(name)).served).toBe(true);
    }

    const answers = await Promise.all(
      SOURCES.map(async (name) => {
        const body = JSON.stringify({ ref: 'refs/heads/main', after: upstreams.get(name)!.commit('main'), repository: { full_name: `acme/${name}`, clone_url: upstreams.get(name)!.bare } });
        const response = await fetch(`${t!.url}/hooks/github`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signBody(WEBHOOK_SECRET, body) },
          body,
        });
        return { status: response.status, body: (await response.json()) as { result?: string } };
      }),
    );
    expect(answers).toEqual(SOURCES.map(() => ({ status: 202, body: expect.objectContaining({ result: 'accepted' }) })));

    const intakes = new Map<string, ReceivedSpan>();
    for (const name of SOURCES) {
      intakes.set(name, await receiver.waitFor(`the intake of the delivery naming ${name}`, (span) => span.name === 'webhook github' && span.attributes['forgesync.source'] === name));
    }
    const deliveryTraces = new Set([...intakes.values()].map((span) => span.traceId));
    for (const name of SOURCES) {
      // The job queued for the source by one of the deliveries (its first sync's job is in another trace).
      const sent = await receiver.waitFor(`the job queued for ${name} by a delivery`, (span) => span.name === 'send sync' && span.attributes['forgesync.job.key'] === ids.get(name) && deliveryTraces.has(span.traceId));
      expect(sent.traceId, name).toBe(intakes.get(name)!.traceId);
    }
  }, 60_000);
});
