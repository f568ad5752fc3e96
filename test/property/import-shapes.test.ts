import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GithubAnswerError } from '../../src/importer/errors.js';
import { checkObjectRow, depthExceeds, listItems, MAX_JSON_DEPTH } from '../../src/importer/run/shape.js';
import type { ObjectRow } from '../../src/importer/store/objects.js';
import { check, hostileString, unknownValue } from './arbitraries.js';

/** Cases per property of this file. */
const RUNS = 5_000;

/** JSON as a hostile API host might send it: any value, sometimes nested far past anything GitHub sends. */
const nested = (depth: number, leaf: unknown): unknown => {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { a: value };
  return value;
};
const upstreamValue = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: unknownValue },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 100_000 }), fc.jsonValue({ maxDepth: 1 })).map(([depth, leaf]) => nested(depth, leaf)) },
);

const scalar = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(null, undefined, Number.MAX_SAFE_INTEGER + 2, -1, 0, 2 ** 53), hostileString({ maxLength: 12, long: 5_000 }), fc.boolean());
const rows = fc.record({
  type: fc.constantFrom('issue', 'label', 'note', 'release_asset', 'protected_branch'),
  key: fc.oneof(fc.nat().map(String), fc.constantFrom('undefined', 'null', '[object Object]', 'NaN', ''), hostileString({ maxLength: 12, long: 5_000 }), scalar),
  number: scalar,
  parent: scalar,
  comments: scalar,
  state: scalar,
  createdAt: fc.oneof(fc.date({ noInvalidDate: true }).map((date) => date.toISOString()), scalar),
  updatedAt: fc.oneof(fc.date({ noInvalidDate: true }).map((date) => date.toISOString().replace(/\.\d+Z$/, 'Z')), scalar),
  data: upstreamValue,
}) as fc.Arbitrary<ObjectRow>;

/** Runs `check`; a refusal must be a GithubAnswerError whose message quotes nothing long of the input. */
function outcomeOf(run: () => void): boolean {
  try {
    run();
    return true;
  } catch (error) {
    expect(error).toBeInstanceOf(GithubAnswerError);
    expect((error as Error).message.length).toBeLessThan(400);
    return false;
  }
}

describe(`what an import takes from an upstream answer (${RUNS} cases per property)`, () => {
  it('a list answer passes only as JSON objects nested within the bound; anything else is a typed refusal', () => {
    check(
      fc.property(fc.oneof(fc.array(upstreamValue, { maxLength: 5 }), upstreamValue), (data) => {
        if (!outcomeOf(() => listItems('/repos/o/r/issues', data))) return;
        expect(Array.isArray(data)).toBe(true);
        for (const item of data as unknown[]) {
          expect(item !== null && typeof item === 'object' && !Array.isArray(item)).toBe(true);
          // Whatever walks it next (JSON.stringify, the login scan) cannot overflow the stack.
          expect(() => JSON.stringify(item)).not.toThrow();
        }
      }),
      RUNS,
    );
  });

  it('a row passes only with a usable key, whole non-negative numbers, timestamps and storable data', () => {
    check(
      fc.property(rows, (row) => {
        if (!outcomeOf(() => checkObjectRow(row))) return;
        expect(typeof row.key === 'string' && row.key.length > 0 && row.key.length <= 1024 && row.key !== '[object Object]').toBe(true);
        for (const value of [row.number, row.parent, row.comments]) if (value !== null && value !== undefined) expect(Number.isSafeInteger(value) && value >= 0).toBe(true);
        for (const value of [row.createdAt, row.updatedAt]) if (value !== null && value !== undefined) expect(Number.isNaN(Date.parse(value))).toBe(false);
        expect(() => JSON.stringify(row.data)).not.toThrow();
      }),
      RUNS,
    );
  });

  it('measures depth without recursion, so a million levels cost no stack', () => {
    const deep = nested(1_000_000, 1);
    expect(depthExceeds(deep, MAX_JSON_DEPTH)).toBe(true);
    expect(depthExceeds(nested(MAX_JSON_DEPTH, 1), MAX_JSON_DEPTH)).toBe(false);
    expect(depthExceeds(nested(MAX_JSON_DEPTH + 1, 1), MAX_JSON_DEPTH)).toBe(true);
    expect(() => listItems('/x', [{ deep }])).toThrow(/nests deeper than 64/);
  });
});
