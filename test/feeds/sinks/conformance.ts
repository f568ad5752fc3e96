import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { outgoing, sequenceText, type CloudEvent, type OutgoingEvent } from '../../../src/feeds/events.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from '../../../src/feeds/sinks/types.js';

/** One event as the receiver got it. */
export interface ReceivedEvent {
  event: CloudEvent;
  /** The exact text it arrived as, where the transport carries one event alone (not an HTTP batch). */
  raw?: string;
}

/** What the suite needs of one sink implementation and its real receiver. */
export interface SinkUnderTest {
  /** Opens a sink on the receiver: batch 1, a few seconds' timeout, an egress policy allowing it, and `options` on top. */
  open(options?: Partial<SinkOptions>): Promise<FeedSink>;
  /** Everything the receiver has taken so far (durably: acknowledged or not), in arrival order. */
  received(): Promise<ReceivedEvent[]>;
  /** Makes the receiver refuse everything (true) until it is set back (false). */
  setFailing(failing: boolean): Promise<void>;
  /** Makes the receiver take requests without ever answering (true) until set back; for sinks whose receiver can. */
  setStalled?(stalled: boolean): Promise<void>;
  /** The batch sizes the delivery cases run with (default [1]). */
  batches?: readonly number[];
}

let made = 0;

/** `count` events of distinct keys, tagged so that one case finds its own among everything a receiver got. */
export function makeEvents(count: number, tag = randomUUID()): OutgoingEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = ++made;
    const event: CloudEvent = {
      specversion: '1.0',
      id: `${tag}:${i}`,
      source: 'forgesync://test-host/replication/linux',
      type: 'dev.forgesync.ref.updated',
      subject: `refs/heads/topic-${i}`,
      time: new Date(Date.UTC(2026, 0, 1, 0, 0, seq % 60)).toISOString(),
      datacontenttype: 'application/json',
      data: { ref: `refs/heads/topic-${i}`, before: 'a'.repeat(40), after: 'b'.repeat(40), index: i },
      sequence: sequenceText(seq),
    };
    return outgoing(event, `linux:refs/heads/topic-${i}`);
  });
}

const never = (): AbortSignal => new AbortController().signal;

/** The received entries of `events`, in arrival order. */
async function receivedOf(sink: SinkUnderTest, events: readonly OutgoingEvent[]): Promise<ReceivedEvent[]> {
  const ids = new Set(events.map((entry) => entry.event.id));
  return (await sink.received()).filter((entry) => ids.has(entry.event.id));
}

function expectAllOk(outcomes: DeliveryOutcome[], count: number): void {
  expect(outcomes).toHaveLength(count);
  expect(outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
}

function expectAllFailed(outcomes: DeliveryOutcome[], count: number, pattern: RegExp): void {
  expect(outcomes).toHaveLength(count);
  for (const outcome of outcomes) {
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.error).toMatch(pattern);
  }
}

/** Runs the sink conformance suite against one implementation. */
export function describeSinkConformance(name: string, under: SinkUnderTest): void {
  describe(`sink conformance: ${name}`, () => {
    const opened: FeedSink[] = [];
    const open = async (options?: Partial<SinkOptions>): Promise<FeedSink> => {
      const sink = await under.open(options);
      opened.push(sink);
      return sink;
    };
    afterEach(async () => {
      await under.setFailing(false);
      await under.setStalled?.(false);
      await Promise.all(opened.splice(0).map((sink) => sink.close()));
    });

    for (const batch of under.batches ?? [1]) {
      it(`delivers every event once, acknowledged, one outcome per event (batch ${batch})`, async () => {
        const sink = await open({ batch });
        const events = makeEvents(11);
        expectAllOk(await sink.deliver(events, never()), events.length);
        const got = await receivedOf(under, events);
        expect(got.map((entry) => entry.event.id).sort()).toEqual(events.map((entry) => entry.event.id).sort());
        for (const entry of got) expect(entry.event).toEqual(events.find((sent) => sent.event.id === entry.event.id)!.event);
      });

      it(`keeps the order of successive deliver calls (batch ${batch})`, async () => {
        const sink = await open({ batch });
        const calls = [makeEvents(5), makeEvents(3), makeEvents(6), makeEvents(1)];
        for (const events of calls) expectAllOk(await sink.deliver(events, never()), events.length);
        const order = (await receivedOf(under, calls.flat())).map((entry) => entry.event.id);
        expect(order).toHaveLength(15);
        const callOf = (id: string) => calls.findIndex((events) => events.some((entry) => entry.event.id === id));
        const seen = order.map(callOf);
        expect(seen).toEqual([...seen].sort((a, b) => a - b));
      });
    }

    it('sends the structured CloudEvent JSON exactly as serialised', async () => {
      const sink = await open();
      const [first, second] = makeEvents(2);
      const tricky = outgoing({ ...first!.event, data: { text: 'line\nbreak "quoted" \\ é ✓ \u2028 😀', nested: { list: [1, null, true] } } }, first!.key);
      const { subject: _omitted, ...withoutSubject } = second!.event;
      const bare = outgoing(withoutSubject as CloudEvent, second!.key);
      expectAllOk(await sink.deliver([tricky, bare], never()), 2);
      const got = await receivedOf(under, [tricky, bare]);
      expect(got).toHaveLength(2);
      for (const sent of [tricky, bare]) {
        const entry = got.find((candidate) => candidate.event.id === sent.event.id)!;
        expect(entry.event).toStrictEqual(JSON.parse(sent.body));
        if (entry.raw !== undefined) expect(entry.raw).toBe(sent.body);
      }
      expect('subject' in got.find((entry) => entry.event.id === bare.event.id)!.event).toBe(false);
    });

    it('answers an empty delivery with no outcomes', async () => {
      const sink = await open();
      expect(await sink.deliver([], never())).toEqual([]);
    });

    it('reports a failing receiver as failed outcomes, never a rejection, and delivers once it recovers', async () => {
      const sink = await open();
      const events = makeEvents(3);
      await under.setFailing(true);
      const outcomes = await sink.deliver(events, never());
      expectAllFailed(outcomes, 3, /\S/);
      expect(await receivedOf(under, events)).toEqual([]);
      await under.setFailing(false);
      expectAllOk(await sink.deliver(events, never()), 3);
      expect((await receivedOf(under, events)).map((entry) => entry.event.id).sort()).toEqual(events.map((entry) => entry.event.id).sort());
    });

    it('sends nothing when the signal has already aborted, and says so', async () => {
      const sink = await open();
      const events = makeEvents(2);
      const controller = new AbortController();
      controller.abort(new Error('shutting down'));
      expectAllFailed(await sink.deliver(events, controller.signal), 2, /aborted: shutting down/);
      expect(await receivedOf(under, events)).toEqual([]);
    });

    if (under.setStalled) {
      const stall = under.setStalled.bind(under);
      it('stops a delivery in flight when the signal aborts', async () => {
        const sink = await open({ timeoutMs: 30_000 });
        await stall(true);
        const controller = new AbortController();
        setTimeout(() => controller.abort(new Error('lease lost')), 200);
        const started = Date.now();
        expectAllFailed(await sink.deliver(makeEvents(3), controller.signal), 3, /aborted: lease lost/);
        expect(Date.now() - started).toBeLessThan(5000);
      });
    }

    it('closes idempotently, and then fails deliveries without rejecting', async () => {
      const sink = await open();
      expectAllOk(await sink.deliver(makeEvents(1), never()), 1);
      await sink.close();
      await sink.close();
      expectAllFailed(await sink.deliver(makeEvents(2), never()), 2, /closed/);
    });

    it('can be closed without ever having delivered', async () => {
      const sink = await open();
      await expect(sink.close()).resolves.toBeUndefined();
    });
  });
}
