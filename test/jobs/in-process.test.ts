import { describe, expect, it } from 'vitest';
import { InProcessTransport } from '../../src/jobs/in-process.js';
import type { SyncJob } from '../../src/jobs/transport.js';

const job = (sourceId: number, host: string): SyncJob => ({ sourceId, host, trigger: 'schedule' });

describe('InProcessTransport', () => {
  it('never runs more jobs than its capacity', async () => {
    const transport = new InProcessTransport({ capacity: 3 });
    let running = 0;
    let peak = 0;
    let done = 0;
    transport.start(async () => {
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      done++;
    });
    for (let id = 1; id <= 20; id++) await transport.enqueue(job(id, `host${id % 4}`));
    while (done < 20) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(peak).toBe(3);
    await transport.stop();
  });

  it('serves upstream hosts in turn so a busy host cannot starve a quiet one', async () => {
    const transport = new InProcessTransport({ capacity: 1 });
    const order: string[] = [];
    for (let id = 1; id <= 10; id++) await transport.enqueue(job(id, 'github.com'));
    await transport.enqueue(job(100, 'gitlab.example.com'));
    transport.start(async (next) => void order.push(next.host));
    while (order.length < 11) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(order.indexOf('gitlab.example.com')).toBeLessThanOrEqual(1);
    await transport.stop();
  });

  it('coalesces nudges for a source already queued and aborts running jobs on stop', async () => {
    const transport = new InProcessTransport({ capacity: 1 });
    const seen: number[] = [];
    let aborted = false;
    transport.start(async (next, signal) => {
      seen.push(next.sourceId);
      if (next.sourceId === 1) {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        aborted = signal.aborted;
      }
    });
    await transport.enqueue(job(1, 'a'));
    await transport.enqueue(job(2, 'a'));
    await transport.enqueue(job(2, 'a'));
    expect(transport.load).toEqual({ running: 1, queued: 1, capacity: 1 });
    await transport.stop();
    expect(aborted).toBe(true);
    expect(seen).toEqual([1]);
  });
});
