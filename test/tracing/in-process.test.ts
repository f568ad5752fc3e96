// Context propagation inside one process, spans exported to a real OTLP/HTTP
// receiver: a request's server span continues an incoming `traceparent` and is
// the active span in its handler; a job on the in-process transport runs in a
// consumer span whose parent is the producer span of its own enqueue, even
// when it is started by another job's end (not from its enqueue's context).
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessTransport } from '../../src/jobs/in-process.js';
import { startTracing, stopTracing, traceHttpRequests, withSpan } from '../../src/tracing/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { OtlpReceiver } from './receiver.js';

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';

describe('spans in one process', () => {
  let receiver: OtlpReceiver;
  let server: FastifyInstance | undefined;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' });
    expect(await startTracing()).toBe(true);
  });

  afterAll(async () => {
    await stopTracing();
    await server?.close();
    await receiver?.close();
  });

  it('serves a request in a server span that continues the caller’s traceparent', async () => {
    server = Fastify();
    traceHttpRequests(server);
    server.get('/items/:id', async () => withSpan('inner work', {}, async () => ({ ok: true })));
    const address = await server.listen({ port: 0, host: '127.0.0.1' });
    const response = await fetch(`${address}/items/42?x=1`, { headers: { traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01` } });
    expect(response.status).toBe(200);

    const request = await receiver.waitFor('the server span', (span) => span.kind === 2);
    expect(request.name).toBe('GET /items/:id');
    expect(request.traceId).toBe(INCOMING_TRACE);
    expect(request.parentSpanId).toBe(INCOMING_SPAN);
    expect(request.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/items/:id', 'url.path': '/items/42', 'http.response.status_code': 200 });
    const inner = await receiver.waitFor('the handler’s span', (span) => span.name === 'inner work');
    expect(inner.parentSpanId).toBe(request.spanId);
  });

  it('runs each in-process job under the producer span of its own enqueue', async () => {
    const jobs = new InProcessTransport({ logger: createLogger({ level: 'silent' }) });
    let releaseFirst!: () => void;
    const firstRunning = new Promise<void>((resolve) => (releaseFirst = resolve));
    const ran: string[] = [];
    jobs.handle('probe', {
      concurrency: 1,
      run: async (job) => {
        ran.push(job.key);
        if (job.key === 'first') await firstRunning;
        await withSpan(`handled ${job.key}`, {}, async () => {});
      },
    });
    await jobs.start();
    await withSpan('caller first', {}, () => jobs.enqueue({ kind: 'probe', key: 'first' }));
    // Queued behind the first: it starts from the first's end, outside its own caller's context.
    await withSpan('caller second', {}, () => jobs.enqueue({ kind: 'probe', key: 'second' }));
    releaseFirst();
    for (const key of ['first', 'second']) {
      const handled = await receiver.waitFor(`the ${key} job's handler span`, (span) => span.name === `handled ${key}`);
      const chain = receiver.ancestors(handled);
      expect(chain.map((span) => span.name)).toEqual(['process probe', 'send probe', `caller ${key}`]);
      expect(chain[0]!.kind).toBe(5);
      expect(chain[0]!.attributes).toMatchObject({ 'messaging.system': 'in-process', 'messaging.destination.name': 'probe', 'forgesync.job.key': key });
      expect(chain[1]!.kind).toBe(4);
    }
    expect(ran).toEqual(['first', 'second']);
    await jobs.close();
  });
});
