import { describe, expect, it } from 'vitest';
import { listingCutoff, newestUpdate, unlisted } from '../../src/importer/stages/deletions.js';
import type { StampedRef } from '../../src/importer/store/reconcile-deletions.js';

/*
 * Which stored objects a whole listing says are gone: those it did not
 * give, unless stored from an answer newer than the listing (created while
 * or after it was read: a webhook's refresh, say).
 */

const note = (key: string, updatedAt: string | null): StampedRef => ({ type: 'note', key, number: 7, updatedAt });

describe('what a whole listing says is gone', () => {
  it('takes the newest update the listing saw, or its start less a minute when that is later', () => {
    const began = Date.parse('2026-03-01T12:00:00.500Z');
    expect(listingCutoff(null, began)).toBe('2026-03-01T11:59:00Z');
    expect(listingCutoff('2026-03-01T11:00:00Z', began)).toBe('2026-03-01T11:59:00Z');
    expect(listingCutoff('2026-03-01T12:00:05Z', began)).toBe('2026-03-01T12:00:05Z');
  });

  it('finds the newest updated_at of a page, across pages', () => {
    expect(newestUpdate([{ updated_at: '2026-01-02T00:00:00Z' }, { updated_at: '2026-01-03T00:00:00Z' }, {}])).toBe('2026-01-03T00:00:00Z');
    expect(newestUpdate([{ updated_at: '2026-01-01T00:00:00Z' }], '2026-01-02T00:00:00Z')).toBe('2026-01-02T00:00:00Z');
    expect(newestUpdate([])).toBeNull();
  });

  it('deletes what the listing left out, but not what was stored from a newer answer', () => {
    const stored = [note('1', '2026-01-01T00:00:00Z'), note('2', '2026-01-01T00:00:00Z'), note('3', '2026-02-01T00:00:00Z'), note('4', null), note('5', '2026-01-15T00:00:00Z')];
    expect(unlisted(stored, new Set(['1']), '2026-01-15T00:00:00Z')).toEqual([
      { type: 'note', key: '2', number: 7 },
      { type: 'note', key: '4', number: 7 },
      { type: 'note', key: '5', number: 7 },
    ]);
  });
});
