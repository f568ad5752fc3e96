import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/util/batcher.js';

describe('Batcher', () => {
  it('runs a lone call alone, gathers the calls made meanwhile into batches of at most maxBatch, answering each in order', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    let gate: Promise<void> = new Promise((resolve) => (release = resolve));
    const batcher = new Batcher<number, string>(
      async (items) => {
        batches.push(items);
        await gate;
        return items.map((item) => `#${item}`);
      },
      { maxBatch: 3 },
    );
    const first = batcher.submit(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[0]]);
    // While the first runs, seven more arrive: they wait, then go three at a time.
    const rest = [1, 2, 3, 4, 5, 6, 7].map((item) => batcher.submit(item));
    release();
    gate = Promise.resolve();
    expect(await Promise.all([first, ...rest])).toEqual(['#0', '#1', '#2', '#3', '#4', '#5', '#6', '#7']);
    expect(batches).toEqual([[0], [1, 2, 3], [4, 5, 6], [7]]);
  });

  it('rejects every call of a failed batch with its error, and goes on with the next', async () => {
    let calls = 0;
    const batcher = new Batcher<string, string>(
      async (items) => {
        calls++;
        if (items.includes('bad')) throw new Error('the database refused the batch');
        return items;
      },
      { maxBatch: 10 },
    );
    const [a, b] = [batcher.submit('ok'), batcher.submit('bad')];
    await expect(a).rejects.toThrow('the database refused the batch');
    await expect(b).rejects.toThrow('the database refused the batch');
    expect(await batcher.submit('later')).toBe('later');
    expect(calls).toBe(2);
  });

  it('keeps at most `concurrency` batches in flight', async () => {
    let running = 0;
    let most = 0;
    const batcher = new Batcher<number, number>(
      async (items) => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        return items;
      },
      { maxBatch: 2, concurrency: 2 },
    );
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => batcher.submit(i)));
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(most).toBe(2);
  });
});
