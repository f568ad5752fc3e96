import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_KEY_LENGTH, MAX_TTL_MS, MIN_TTL_MS, validateFence, validateKey, validateOwnerName, validatePrefix, validateTtl } from '../../src/leases/validate.js';
import { attempt, check, hostileString, unknownValue } from './arbitraries.js';

/** Cases per property of this file. */
const KEY_RUNS = 20_000;
const PREFIX_RUNS = 10_000;
const TTL_RUNS = 20_000;
const OWNER_RUNS = 20_000;
const FENCE_RUNS = 20_000;

// eslint-disable-next-line no-control-regex
const C0_OR_DEL = /[\u0000-\u001f\u007f]/;

const keyLike = fc.oneof(
  { weight: 3, arbitrary: hostileString({ maxLength: 12, long: 600 }) },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z]{1,10}:[0-9]{1,6}$/) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 250, maxLength: 260 }) },
  { weight: 2, arbitrary: unknownValue },
);

function expectKey(key: string, given: unknown): void {
  expect(key).toBe(given);
  expect(key.length).toBeGreaterThan(0);
  expect(key.length).toBeLessThanOrEqual(MAX_KEY_LENGTH);
  expect(C0_OR_DEL.test(key), 'control characters').toBe(false);
  expect(key.trim()).toBe(key);
}

describe(`validateKey (${KEY_RUNS} cases per property)`, () => {
  it('returns a non-empty key of at most 255 characters with no control characters or edge whitespace, or refuses naming the lease key', () => {
    check(
      fc.property(keyLike, (key) => {
        const outcome = attempt(() => validateKey(key), /lease key/i);
        if (outcome.ok) expectKey(outcome.value, key);
        // A refused key is never echoed whole when it is long.
        else if (typeof key === 'string' && key.length > MAX_KEY_LENGTH) expect(outcome.error.message).not.toContain(key);
      }),
      KEY_RUNS,
    );
  });
});

describe(`validatePrefix (${PREFIX_RUNS} cases per property)`, () => {
  it('returns "" for no prefix, a valid key otherwise, or refuses naming the lease key', () => {
    check(
      fc.property(keyLike, (prefix) => {
        const outcome = attempt(() => validatePrefix(prefix), /lease key|prefix/i);
        if (!outcome.ok) return;
        if (prefix === undefined || prefix === '') expect(outcome.value).toBe('');
        else expectKey(outcome.value, prefix);
      }),
      PREFIX_RUNS,
    );
  });
});

describe(`validateTtl (${TTL_RUNS} cases per property)`, () => {
  const ttlLike = fc.oneof(
    fc.integer({ min: -10, max: MAX_TTL_MS + 10 }),
    fc.constantFrom(MIN_TTL_MS - 1, MIN_TTL_MS, MAX_TTL_MS, MAX_TTL_MS + 1, 10.5, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE),
    fc.double(),
    unknownValue,
  );
  const fieldName = fc.constantFrom('ttlMs', 'waitMs', 'retryMs', 'heartbeatMs');

  it('returns an integer from 10 ms to 24 h, or refuses naming the option', () => {
    check(
      fc.property(ttlLike, fieldName, (ttl, name) => {
        const outcome = attempt(() => validateTtl(ttl, name), new RegExp(name));
        if (!outcome.ok) return;
        expect(outcome.value).toBe(ttl);
        expect(Number.isInteger(outcome.value)).toBe(true);
        expect(outcome.value).toBeGreaterThanOrEqual(MIN_TTL_MS);
        expect(outcome.value).toBeLessThanOrEqual(MAX_TTL_MS);
      }),
      TTL_RUNS,
    );
  });
});

describe(`validateOwnerName (${OWNER_RUNS} cases per property)`, () => {
  it('returns a non-blank name of at most 128 characters without control characters (a default when absent), or refuses naming the owner', () => {
    check(
      fc.property(fc.oneof(hostileString({ maxLength: 12, long: 400 }), unknownValue), (owner) => {
        const outcome = attempt(() => validateOwnerName(owner), /owner/i);
        if (!outcome.ok) {
          expect(outcome.error.message.length).toBeLessThan(500);
          return;
        }
        const name = outcome.value;
        if (owner !== undefined) expect(name).toBe(owner);
        expect(typeof name).toBe('string');
        expect(name.trim()).not.toBe('');
        expect(name.length).toBeLessThanOrEqual(128);
        expect(C0_OR_DEL.test(name), 'control characters').toBe(false);
      }),
      OWNER_RUNS,
    );
  });
});

describe(`validateFence (${FENCE_RUNS} cases per property)`, () => {
  const fenceLike = fc.oneof(
    fc.bigInt(),
    fc.integer().map(String),
    fc.bigInt().map(String),
    fc.constantFrom('1', '0', '-1', ' 7 ', '0x10', '0b11', '1e3', '1.0', '', '  ', '9'.repeat(400)),
    fc.double(),
    unknownValue,
  );

  it('returns a positive bigint (undefined when absent), or refuses naming the field', () => {
    check(
      fc.property(fenceLike, fc.constantFrom('fence', 'floor'), (fence, name) => {
        const outcome = attempt(() => validateFence(fence, name), new RegExp(name));
        if (!outcome.ok) return;
        if (fence === undefined || fence === null) {
          expect(outcome.value).toBeUndefined();
          return;
        }
        expect(typeof outcome.value).toBe('bigint');
        expect(outcome.value! > 0n).toBe(true);
      }),
      FENCE_RUNS,
    );
  });
});
