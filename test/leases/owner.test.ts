import { describe, expect, it } from 'vitest';
import { MAX_OWNER_LENGTH, ownerName } from '../../src/leases/owner.js';
import { validateOwnerName } from '../../src/leases/validate.js';

describe('ownerName', () => {
  it('keeps a short name and cuts a long one to what the manager accepts', () => {
    expect(ownerName('sync linux')).toBe('sync linux');
    const long = `sync ${'x'.repeat(300)}`;
    expect(ownerName(long)).toBe(long.slice(0, MAX_OWNER_LENGTH));
    expect(() => validateOwnerName(ownerName(long))).not.toThrow();
  });

  it('never cuts a character made of two code units in half (an emoji at the boundary)', () => {
    const name = `sync ${'x'.repeat(MAX_OWNER_LENGTH - 6)}🚀 and more`; // the rocket's first half is code unit 128
    const cut = ownerName(name);
    expect(cut).toBe(name.slice(0, MAX_OWNER_LENGTH - 1));
    expect(() => validateOwnerName(cut)).not.toThrow();
    const whole = `sync ${'x'.repeat(MAX_OWNER_LENGTH - 7)}🚀 and more`; // the rocket fits: kept whole
    expect(ownerName(whole)).toBe(whole.slice(0, MAX_OWNER_LENGTH));
    expect(ownerName(whole).endsWith('🚀')).toBe(true);
  });
});
