import { describe, expect, it } from 'vitest';
import { checkBudget, heldBytes } from '../../src/snapshots/budget.js';
import { SnapshotBudgetExceededError, formatBytes } from '../../src/snapshots/errors.js';
import type { SnapshotHold } from '../../src/snapshots/holds.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);

function hold(sha: string, extra: Partial<SnapshotHold> = {}): SnapshotHold {
  return { handle: Math.random().toString(16).slice(2), source: 'app', sourceDir: '1-app', sha, owner: 'api', pid: 1, host: 'h', createdAt: '', expiresAt: null, ...extra };
}

const entries = [
  { sourceDir: '1-app', sha: A, bytes: 1000 },
  { sourceDir: '1-app', sha: B, bytes: 300 },
];

describe('snapshot budget', () => {
  it('counts each held snapshot once, a snapshot being made by its measured bytes, and a base being linked from not at all', () => {
    expect(heldBytes(entries, [hold(A), hold(A), hold(A)]).bytes).toBe(1000);
    expect(heldBytes(entries, [hold(B, { purpose: 'base' })]).bytes).toBe(0);
    expect(heldBytes(entries, [hold(A), hold(C, { purpose: 'making', bytes: 50 })]).bytes).toBe(1050);
    // The record, once written, is what counts.
    expect(heldBytes(entries, [hold(B, { purpose: 'making', bytes: 999 })]).bytes).toBe(300);
    // An unheld snapshot on disk takes no budget (it is evicted when room is needed).
    expect(heldBytes(entries, []).bytes).toBe(0);
  });

  it('refuses what would exceed the limit, allows up to it, and always allows one more hold of a held snapshot', () => {
    const holds = [hold(A)];
    expect(() => checkBudget({ source: 'app', sourceDir: '1-app', sha: B, bytes: 300 }, entries, holds, 1300)).not.toThrow();
    expect(() => checkBudget({ source: 'app', sourceDir: '1-app', sha: B, bytes: 300 }, entries, holds, 1299)).toThrow(SnapshotBudgetExceededError);
    expect(() => checkBudget({ source: 'app', sourceDir: '1-app', sha: A, bytes: 1000 }, entries, holds, 1)).not.toThrow();
    // Another source's directory is another snapshot, even for the same commit.
    expect(() => checkBudget({ source: 'other', sourceDir: '2-other', sha: A, bytes: 1000 }, entries, holds, 1999)).toThrow(SnapshotBudgetExceededError);
  });

  it('writes sizes readably and exactly', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(10 * 2 ** 30)).toBe('10 GiB');
    expect(formatBytes(1536)).toBe('1.5 KiB (1536 B)');
  });
});
