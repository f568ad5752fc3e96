import { describe, expect, it } from 'vitest';
import { AdaptiveLimit, type Permit } from '../../src/importer/github/adaptive-limit.js';

/*
 * The adaptive in-flight limit of one token on one API host (AIMD): it
 * starts small and doubles, halves on a secondary-limit answer (once per
 * round, never below 1), grows back by one per round of successes, and
 * probes a level that was refused only after a quiet time. Requests over
 * the limit wait in order and leave the queue when their signal aborts.
 */

/** Takes `count` permits at once (all must be granted without waiting). */
async function take(limit: AdaptiveLimit, count: number): Promise<Permit[]> {
  return Promise.all(Array.from({ length: count }, () => limit.acquire()));
}

/** Completes `rounds` rounds of successes with every place in use (each success's place taken again at once). */
async function succeedRounds(limit: AdaptiveLimit, rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const held = await take(limit, limit.limit);
    for (let answers = held.length; answers > 0; answers--) {
      held.shift()!.success();
      held.push(await limit.acquire());
    }
    for (const permit of held) permit.release();
  }
}

describe('an adaptive in-flight limit', () => {
  it('starts at 2 and doubles per round of successes up to the configured concurrency', async () => {
    const limit = new AdaptiveLimit(20);
    expect(limit.limit).toBe(2);
    await succeedRounds(limit, 1);
    expect(limit.limit).toBe(4);
    await succeedRounds(limit, 3);
    expect(limit.limit).toBe(20);
    await succeedRounds(limit, 2);
    expect(limit.limit).toBe(20);
  });

  it('does not grow on successes while the limit was not in use', async () => {
    const limit = new AdaptiveLimit(20, { initial: 4 });
    for (let answers = 0; answers < 50; answers++) (await limit.acquire()).success();
    expect(limit.limit).toBe(4);
  });

  it('halves on a secondary-limit answer, once for all requests sent before the cut, never below 1', async () => {
    const limit = new AdaptiveLimit(20, { initial: 16 });
    const sent = await take(limit, 16);
    for (const permit of sent.slice(0, 10)) permit.secondaryLimited();
    expect(limit.limit).toBe(8);
    for (const permit of sent.slice(10)) permit.release();
    // Each round that is refused again halves again, down to 1 and not below.
    for (const expected of [4, 2, 1, 1]) {
      const [permit] = await take(limit, 1);
      permit!.secondaryLimited();
      expect(limit.limit).toBe(expected);
    }
  });

  it('grows back by one per round below the refused level, and probes that level only after a quiet time', async () => {
    let now = 0;
    const limit = new AdaptiveLimit(20, { initial: 8, probeQuietMs: 10_000, now: () => now });
    const [refused] = await take(limit, 1);
    refused!.secondaryLimited();
    expect(limit.limit).toBe(4);
    await succeedRounds(limit, 1);
    expect(limit.limit).toBe(5);
    await succeedRounds(limit, 5);
    expect(limit.limit).toBe(7);
    now = 10_000;
    await succeedRounds(limit, 1);
    expect(limit.limit).toBe(8);
    // The probe is refused: the next one waits twice as long.
    const [probe] = await take(limit, 1);
    probe!.secondaryLimited();
    expect(limit.limit).toBe(4);
    await succeedRounds(limit, 4);
    expect(limit.limit).toBe(7);
    now = 25_000;
    await succeedRounds(limit, 1);
    expect(limit.limit).toBe(7);
    now = 30_000;
    await succeedRounds(limit, 1);
    expect(limit.limit).toBe(8);
  });

  it('takes the level a refused request went at as the refused one, not the whole limit, and drops the edge below it by one if that is refused too', async () => {
    let now = 0;
    const limit = new AdaptiveLimit(20, { initial: 8, probeQuietMs: 10_000, now: () => now });
    const permits = await take(limit, 8);
    // A host allowing 6 at once refuses the 8th (the 7th went as an earlier one was being answered): 8 is too many.
    expect(permits[7]!.secondaryLimited()).toBe('limit-cut');
    expect(permits[6]!.secondaryLimited()).toBe('sent-before-cut');
    for (const permit of permits.slice(0, 6)) permit.success();
    expect(limit.limit).toBe(4);
    await succeedRounds(limit, 5);
    expect(limit.limit).toBe(7);
    // The edge, 7, is refused too: one fewer, not half.
    const edge = await take(limit, 7);
    expect(edge[6]!.secondaryLimited()).toBe('limit-cut');
    for (const permit of edge.slice(0, 6)) permit.success();
    expect(limit.limit).toBe(6);
    now = 5_000;
    await succeedRounds(limit, 2);
    expect(limit.limit).toBe(6);
    // After the quiet time, 7 is probed again.
    now = 16_000;
    await succeedRounds(limit, 1);
    expect(limit.limit).toBe(7);
  });

  it('tells a request refused with nothing else in flight apart: concurrency is not the cause', async () => {
    const limit = new AdaptiveLimit(20, { initial: 4 });
    const [alone] = await take(limit, 1);
    expect(alone!.secondaryLimited()).toBe('not-concurrency');
    expect(limit.limit).toBe(2);
  });

  it('makes requests over the limit wait in arrival order', async () => {
    const limit = new AdaptiveLimit(4, { initial: 2 });
    const [first, second] = await take(limit, 2);
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) => limit.acquire().then((permit) => (order.push(n), permit)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(limit.waiting).toBe(3);
    first!.release();
    const third = await waiting[0]!;
    second!.release();
    third.release();
    await Promise.all(waiting.slice(1));
    expect(order).toEqual([1, 2, 3]);
    expect(limit.inFlight).toBe(2);
  });

  it('takes an aborted waiter out of the queue, and a permit counts once', async () => {
    const limit = new AdaptiveLimit(1, { initial: 1 });
    const [held] = await take(limit, 1);
    const controller = new AbortController();
    const aborted = limit.acquire(controller.signal);
    const next = limit.acquire(controller.signal);
    expect(limit.waiting).toBe(2);
    controller.abort(new Error('lease lost'));
    await expect(aborted).rejects.toThrow('lease lost');
    await expect(next).rejects.toThrow('lease lost');
    expect(limit.waiting).toBe(0);
    await expect(limit.acquire(controller.signal)).rejects.toThrow('lease lost');
    held!.release();
    held!.release();
    expect(limit.inFlight).toBe(0);
  });

  it('leaves no listener on the signal of a waiter that got its place', async () => {
    const limit = new AdaptiveLimit(1, { initial: 1 });
    const { signal, listening } = countedSignal();
    const [busy] = await take(limit, 1);
    const granted = limit.acquire(signal);
    expect(listening()).toBe(1);
    busy!.success();
    (await granted).success();
    expect(limit.inFlight).toBe(0);
    expect(listening()).toBe(0);
  });
});

/** A signal that counts the abort listeners on it. */
function countedSignal(): { signal: AbortSignal; listening: () => number } {
  const signal = new AbortController().signal;
  let count = 0;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<typeof add>) => (count++, add(...args))) as typeof add;
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => (count--, remove(...args))) as typeof remove;
  return { signal, listening: () => count };
}
