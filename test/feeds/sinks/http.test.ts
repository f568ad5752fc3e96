import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../../src/egress/policy.js';
import { InvalidSinkSecretError } from '../../../src/feeds/sinks/errors.js';
import { openSink } from '../../../src/feeds/sinks/open.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from '../../../src/feeds/sinks/types.js';
import { describeSinkConformance, makeEvents } from './conformance.js';
import { WebhookReceiver } from './http-receiver.js';

const policy = new EgressPolicy({ allowNetworks: ['127.0.0.1/32'] });
const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
const never = (): AbortSignal => new AbortController().signal;

let receiver: WebhookReceiver;
const secret = newSecret();
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await receiver?.stop();
});

const opened: FeedSink[] = [];
async function open(options: Partial<SinkOptions> = {}, url = receiver.url()): Promise<FeedSink> {
  const sink = await openSink(url, { batch: 1, timeoutMs: 5000, policy, ...options });
  opened.push(sink);
  return sink;
}
afterEach(async () => {
  receiver.reset();
  receiver.verifier = null;
  await Promise.all(opened.splice(0).map((sink) => sink.close()));
});

// Every conformance delivery is signed and verified by the receiver: a bad signature is a 401, which fails the case.
describeSinkConformance('http', {
  open: async (options) => {
    receiver.verifier = new Webhook(secret);
    return open({ secret, ...options });
  },
  received: async () => receiver.accepted,
  setFailing: async (failing) => void (receiver.failing = failing),
  setStalled: async (stalled) => {
    receiver.stalled = stalled;
    if (!stalled) receiver.releaseHanging();
  },
  batches: [1, 4],
});

const failure = (outcome: DeliveryOutcome | undefined) => {
  expect(outcome?.ok).toBe(false);
  return outcome as Extract<DeliveryOutcome, { ok: false }>;
};

describe('http sink: Standard Webhooks signatures', () => {
  let since: number;
  beforeEach(() => {
    since = receiver.requests.length;
  });
  const mine = () => receiver.requests.slice(since);

  it('signs each event with its id, a current timestamp and an HMAC the standardwebhooks verifier accepts', async () => {
    const sink = await open({ secret });
    const events = makeEvents(3);
    expect((await sink.deliver(events, never())).every((outcome) => outcome.ok)).toBe(true);
    const verifier = new Webhook(secret);
    expect(mine()).toHaveLength(3);
    for (const request of mine()) {
      const event = events.find((entry) => entry.body === request.body)!;
      expect(request.headers['webhook-id']).toBe(event.event.id);
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(request.headers['content-type']).toBe('application/cloudevents+json');
      expect(verifier.verify(request.body, request.headers as Record<string, string>)).toEqual(event.event);
      // The check can fail: another body, or another secret, does not verify.
      expect(() => verifier.verify(`${request.body} `, request.headers as Record<string, string>)).toThrow();
      expect(() => new Webhook(newSecret()).verify(request.body, request.headers as Record<string, string>)).toThrow();
    }
  });

  it('gives a batch a webhook-id derived from all its event ids: the same for a retry, another for any other batch', async () => {
    const sink = await open({ secret, batch: 3 });
    const events = makeEvents(6);
    await sink.deliver(events, never());
    await sink.deliver(events.slice(0, 3), never());
    await sink.deliver([events[0]!, events[4]!], never());
    const ids = mine().map((request) => request.headers['webhook-id']);
    expect(ids).toHaveLength(4);
    for (const id of ids) expect(id).toMatch(/^batch_[A-Za-z0-9_-]{32}$/);
    const firstChunk = `[${events.slice(0, 3).map((entry) => entry.body).join(',')}]`;
    const retried = mine().filter((request) => request.body === firstChunk).map((request) => request.headers['webhook-id']);
    expect(retried).toHaveLength(2);
    expect(retried[0]).toBe(retried[1]);
    // The third batch starts with the same event as the first: another id all the same.
    expect(new Set(ids).size).toBe(3);
    for (const request of mine()) {
      expect(request.headers['content-type']).toBe('application/cloudevents-batch+json');
      expect(new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).toBeInstanceOf(Array);
    }
  });

  it('signs with the UTF-8 bytes of a secret that is not base64, as the verifiers\' raw format reads it', async () => {
    const plain = `plain-${randomBytes(12).toString('hex')}!`;
    const sink = await open({ secret: plain });
    expect((await sink.deliver(makeEvents(1), never()))[0]).toEqual({ ok: true });
    const [request] = mine();
    expect(new Webhook(plain, { format: 'raw' }).verify(request!.body, request!.headers as Record<string, string>)).toBeTruthy();
  });

  it('refuses a whsec_ secret whose rest is not base64, without repeating it', async () => {
    const broken = `whsec_${randomBytes(12).toString('hex')}!`;
    const error = await open({ secret: broken }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidSinkSecretError);
    expect((error as Error).message).toMatch(/not padded base64/);
    expect((error as Error).message).not.toContain(broken.slice(6));
  });

  it('sends no signature headers without a secret', async () => {
    const sink = await open();
    await sink.deliver(makeEvents(1), never());
    expect(Object.keys(mine()[0]!.headers).filter((name) => name.startsWith('webhook-'))).toEqual([]);
  });
});

describe('http sink: answers', () => {
  it('turns 410 into gone', async () => {
    receiver.answer = () => ({ status: 410, body: 'endpoint removed' });
    const outcome = failure((await (await open()).deliver(makeEvents(1), never()))[0]);
    expect(outcome.gone).toBe(true);
    expect(outcome.error).toMatch(/^HTTP 410: .*gone.*endpoint removed/);
  });

  it('reads Retry-After of a 429 in seconds and of a 503 as an HTTP date', async () => {
    const sink = await open();
    receiver.answer = () => ({ status: 429, headers: { 'retry-after': '7' }, body: 'slow down' });
    const limited = failure((await sink.deliver(makeEvents(1), never()))[0]);
    expect(limited).toMatchObject({ retryAfterMs: 7000, error: 'HTTP 429: slow down' });
    receiver.answer = () => ({ status: 503, headers: { 'retry-after': new Date(Date.now() + 30_000).toUTCString() } });
    const unavailable = failure((await sink.deliver(makeEvents(1), never()))[0]);
    expect(unavailable.retryAfterMs).toBeGreaterThan(25_000);
    expect(unavailable.retryAfterMs).toBeLessThanOrEqual(30_000);
    receiver.answer = () => ({ status: 503 });
    expect(failure((await sink.deliver(makeEvents(1), never()))[0]).retryAfterMs).toBeUndefined();
    // A receiver's word is bounded: no delay of 10^400 seconds (Infinity) or a date in the year 275760 holds a change back for longer than a day.
    for (const value of ['9'.repeat(40), 'Sat, 13 Sep 275760 00:00:00 GMT']) {
      receiver.answer = () => ({ status: 429, headers: { 'retry-after': value } });
      expect(failure((await sink.deliver(makeEvents(1), never()))[0]).retryAfterMs).toBe(24 * 3_600_000);
    }
  });

  it('reports other statuses with a short snippet of the body, the secret hidden should it be echoed', async () => {
    const signing = newSecret();
    receiver.answer = (request) => ({ status: 500, body: `failed\n\tto store ${request.headers['webhook-id']} with ${signing} ${'x'.repeat(1000)}` });
    const outcome = failure((await (await open({ secret: signing })).deliver(makeEvents(1), never()))[0]);
    expect(outcome.error).toMatch(/^HTTP 500: failed to store \S+ with \*\*\* x+$/);
    expect(outcome.error).not.toContain(signing);
    expect(outcome.error.length).toBeLessThan(260);
  });

  it('does not follow a redirect, and says so', async () => {
    let followed = false;
    receiver.answer = (request) => {
      if (request.path === '/moved') followed = true;
      return request.path === '/moved' ? { status: 204 } : { status: 307, headers: { location: '/moved?token=abc123' } };
    };
    const outcome = failure((await (await open()).deliver(makeEvents(1), never()))[0]);
    expect(outcome.error).toMatch(/^HTTP 307: the receiver redirects to http:\/\/127\.0\.0\.1:\d+\/moved\?token=\*\*\*; forgesync does not follow/);
    expect(followed).toBe(false);
  });

  it('gives each event of a batch the outcome of its request', async () => {
    const events = makeEvents(6);
    const poisoned = events[3]!.event.id;
    receiver.answer = (request) => (request.body.includes(poisoned) ? { status: 422, body: 'bad event' } : { status: 200 });
    const outcomes = await (await open({ batch: 2 })).deliver(events, never());
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, false, false, true, true]);
    expect(failure(outcomes[2]).error).toBe('HTTP 422: bad event');
  });
});

describe('http sink: connections', () => {
  it('has a few requests in flight at once, on kept-alive connections', async () => {
    receiver.delayMs = 50;
    const before = receiver.connections;
    const sink = await open();
    expect((await sink.deliver(makeEvents(24), never())).every((outcome) => outcome.ok)).toBe(true);
    expect(receiver.maxInFlight).toBeGreaterThan(1);
    expect(receiver.maxInFlight).toBeLessThanOrEqual(8);
    const opened = receiver.connections - before;
    expect(opened).toBeLessThanOrEqual(8);
    expect((await sink.deliver(makeEvents(4), never())).every((outcome) => outcome.ok)).toBe(true);
    expect(receiver.connections - before).toBe(opened);
  });

  it('fails a request that outlives the timeout', async () => {
    receiver.stalled = true;
    const started = Date.now();
    const outcome = failure((await (await open({ timeoutMs: 300 })).deliver(makeEvents(1), never()))[0]);
    expect(outcome.error).toMatch(/did not answer within 300 ms/);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('sends nothing to an address the egress policy refuses', async () => {
    const before = receiver.requests.length;
    const sink = await openSink(receiver.url(), { batch: 1, timeoutMs: 5000, policy: new EgressPolicy() });
    opened.push(sink);
    const outcome = failure((await sink.deliver(makeEvents(2), never()))[1]);
    expect(outcome.error).toMatch(/refusing to connect to 127\.0\.0\.1: it is in 127\.0\.0\.0\/8 .*allowNetworks/);
    expect(receiver.requests.length).toBe(before);
  });

  it('fails clearly when nothing listens', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    const outcome = failure((await (await open({}, `http://127.0.0.1:${port}/hook`)).deliver(makeEvents(1), never()))[0]);
    expect(outcome.error).toBe(`http://127.0.0.1:${port}: ECONNREFUSED`);
  });
});
