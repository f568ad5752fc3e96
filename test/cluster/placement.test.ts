import { describe, expect, it } from 'vitest';
import { rendezvousShard } from '../../src/cluster/placement.js';

const names = Array.from({ length: 6000 }, (_, i) => `repo-${i}`);

describe('rendezvous placement', () => {
  it('is the same whatever order the shards come in, and null without one', () => {
    const shards = [
      { id: 'a', weight: 1 },
      { id: 'b', weight: 2 },
      { id: 'c', weight: 1 },
    ];
    for (const name of names.slice(0, 200)) expect(rendezvousShard(name, shards)).toBe(rendezvousShard(name, [...shards].reverse()));
    expect(rendezvousShard('x', [])).toBeNull();
    expect(rendezvousShard('x', [{ id: 'a', weight: 0 }])).toBeNull();
  });

  it('shares sources in proportion to weight', () => {
    const counts = new Map<string, number>();
    const shards = [
      { id: 'small', weight: 1 },
      { id: 'big', weight: 3 },
    ];
    for (const name of names) counts.set(rendezvousShard(name, shards)!, (counts.get(rendezvousShard(name, shards)!) ?? 0) + 1);
    const share = counts.get('big')! / names.length;
    expect(share).toBeGreaterThan(0.72);
    expect(share).toBeLessThan(0.78);
  });

  it('moves only the sources a new shard wins when one is added', () => {
    const three = ['s1', 's2', 's3'].map((id) => ({ id, weight: 1 }));
    const four = [...three, { id: 's4', weight: 1 }];
    let moved = 0;
    for (const name of names) {
      const before = rendezvousShard(name, three);
      const after = rendezvousShard(name, four);
      if (before !== after) {
        expect(after).toBe('s4');
        moved++;
      }
    }
    expect(moved / names.length).toBeGreaterThan(0.22);
    expect(moved / names.length).toBeLessThan(0.28);
  });
});
