import { describe, expect, it } from 'vitest';
import { SizedLru } from '../../src/util/sized-lru.js';

const lru = () => new SizedLru<string>({ maxBytes: 10, maxEntryBytes: 6, sizeOf: (value) => value.length });

describe('SizedLru', () => {
  it('forgets the least recently used once the bytes pass the budget', () => {
    const cache = lru();
    cache.set('a', 'aaaa');
    cache.set('b', 'bbbb');
    expect(cache.get('a')).toBe('aaaa'); // a is now the most recently used
    cache.set('c', 'cccc'); // 12 bytes: b goes
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual(['aaaa', undefined, 'cccc']);
  });

  it('keeps nothing larger than an entry may be, and counts a replaced value once', () => {
    const cache = lru();
    cache.set('big', 'x'.repeat(7));
    expect(cache.get('big')).toBeUndefined();
    cache.set('a', 'aaaaaa');
    cache.set('a', 'aaaaa');
    cache.set('b', 'bbbbb'); // 10 bytes in all: both stay
    expect([cache.get('a'), cache.get('b')]).toEqual(['aaaaa', 'bbbbb']);
    cache.delete('a');
    cache.set('c', 'ccccc');
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 'bbbbb', 'ccccc']);
  });
});
