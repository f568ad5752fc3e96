import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePayload } from '../../src/replication/webhooks/body.js';
import { parseCron, parseDuration, parseInterval } from '../../src/replication/schedule.js';
import { attempt, check, hostileString, hostileUnit, piece } from './arbitraries.js';

/** Cases per property of this file. */
const PAYLOAD_RUNS = 10_000;
const INTERVAL_RUNS = 20_000;
const DURATION_RUNS = 20_000;
const CRON_RUNS = 5_000;

const contentTypes = fc.oneof(
  fc.constantFrom(undefined, '', 'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=utf-8', 'text/plain', 'multipart/form-data; boundary=x', ';', ' ; ;'),
  hostileString({ maxLength: 6 }),
);

/** Bodies: JSON of any value (objects, arrays, scalars, deep nesting), form-encoded JSON, broken JSON, raw bytes. */
const bodies = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
  { weight: 2, arbitrary: fc.json({ maxDepth: 3 }).map((text) => `payload=${encodeURIComponent(text)}`) },
  { weight: 1, arbitrary: fc.array(fc.tuple(fc.constantFrom('payload', 'x', '', 'payload[]'), hostileString({ maxLength: 6 })), { maxLength: 3 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')) },
  { weight: 2, arbitrary: fc.tuple(fc.json({ maxDepth: 2 }), fc.nat(40), hostileString({ maxLength: 3 })).map(([text, cut, junk]) => text.slice(0, cut) + junk) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 50_000 }).chain((depth) => fc.constantFrom(`${'['.repeat(depth)}${']'.repeat(depth)}`, `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`, '['.repeat(depth))) },
  { weight: 1, arbitrary: hostileString({ maxLength: 12, long: 20_000 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\n', '\ufeff{}', '{}\u0000', 'null', 'true', '1', '"x"', '[]', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}') },
);

describe(`parsePayload (${PAYLOAD_RUNS} cases per property)`, () => {
  it('returns a plain JSON object, or refuses naming the body or payload', () => {
    check(
      fc.property(fc.oneof(bodies.map((text) => Buffer.from(text, 'utf8')), fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes))), contentTypes, (raw, contentType) => {
        const outcome = attempt(() => parsePayload(raw, contentType), /body|payload/i);
        if (!outcome.ok) return;
        const value = outcome.value;
        expect(value !== null && typeof value === 'object' && !Array.isArray(value)).toBe(true);
        // It is the JSON the body holds, not a prototype-polluted merge of it.
        expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
        expect(({} as Record<string, unknown>).x).toBeUndefined();
      }),
      PAYLOAD_RUNS,
    );
  });

  it('accepts every JSON object, as JSON and form-encoded, unchanged', () => {
    check(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 6 }), fc.boolean(), (object, form) => {
        const text = JSON.stringify(object);
        const raw = Buffer.from(form ? `payload=${encodeURIComponent(text)}` : text);
        expect(parsePayload(raw, form ? 'application/x-www-form-urlencoded' : 'application/json')).toEqual(JSON.parse(text));
      }),
      PAYLOAD_RUNS,
    );
  });
});

/** Duration texts: the documented forms, their neighbours and hostile text. */
const durationLike = fc.oneof(
  fc.stringMatching(/^(\d{1,4}(ms|s|m|h|d)){1,3}$/),
  fc.stringMatching(/^\s?\d{1,25}\s?$/),
  fc.array(fc.oneof(fc.constantFrom('1', '30', '0', '-1', '1.5', '1e3', 'ms', 's', 'm', 'h', 'd', 'w', 'y', ' ', 'µs', '١', '９', '999999999999999999999'), piece, hostileUnit), { maxLength: 5 }).map((parts) => parts.join('')),
  hostileString({ maxLength: 8, long: 2000 }),
);

const MAX_MS = 365 * 86_400_000;

describe(`parseInterval (${INTERVAL_RUNS} cases per property)`, () => {
  it('returns whole milliseconds from 1 s to 365 d, or refuses naming the interval', () => {
    check(
      fc.property(durationLike, (text) => {
        const outcome = attempt(() => parseInterval(text), /interval|duration/i);
        if (!outcome.ok) return;
        expect(Number.isSafeInteger(outcome.value)).toBe(true);
        expect(outcome.value).toBeGreaterThanOrEqual(1000);
        expect(outcome.value).toBeLessThanOrEqual(MAX_MS);
      }),
      INTERVAL_RUNS,
    );
  });
});

describe(`parseDuration (${DURATION_RUNS} cases per property)`, () => {
  it('returns whole milliseconds from the minimum to 365 d, or refuses naming the duration', () => {
    check(
      fc.property(durationLike, fc.integer({ min: 1, max: 86_400_000 }), (text, min) => {
        const outcome = attempt(() => parseDuration(text, min), /interval|duration/i);
        if (!outcome.ok) return;
        expect(Number.isSafeInteger(outcome.value)).toBe(true);
        expect(outcome.value).toBeGreaterThanOrEqual(min);
        expect(outcome.value).toBeLessThanOrEqual(MAX_MS);
      }),
      DURATION_RUNS,
    );
  });

  it('adds up the documented units exactly', () => {
    const parts = fc.array(fc.tuple(fc.integer({ min: 0, max: 500 }), fc.constantFrom(['ms', 1], ['s', 1000], ['m', 60_000], ['h', 3_600_000], ['d', 86_400_000]) as fc.Arbitrary<[string, number]>), { minLength: 1, maxLength: 4 });
    check(
      fc.property(parts, (list) => {
        const total = list.reduce((sum, [amount, [, unit]]) => sum + amount * unit, 0);
        fc.pre(total >= 1 && total <= MAX_MS);
        expect(parseDuration(list.map(([amount, [unit]]) => `${amount}${unit}`).join(''))).toBe(total);
      }),
      DURATION_RUNS,
    );
  });
});

describe(`parseCron (${CRON_RUNS} cases per property)`, () => {
  const cronField = fc.oneof(
    fc.constantFrom('*', '*/5', '0', '59', '60', '1-5', '5-1', '1,2,3', 'MON', 'jan', 'L', 'W', '#', '?', '*/0', '-1', '99999999999999999999', ''),
    hostileString({ maxLength: 3 }),
  );
  const cronLike = fc.oneof(
    fc.array(cronField, { minLength: 1, maxLength: 8 }).chain((fields) => fc.constantFrom(' ', '  ', '\t', '\n').map((separator) => fields.join(separator))),
    fc.constantFrom('@daily', '@hourly', '@reboot', '@yearly', '@every 1h'),
    hostileString({ maxLength: 10, long: 500 }),
  );

  it('returns the expression unchanged, or refuses naming the cron expression', () => {
    check(
      fc.property(cronLike, (expression) => {
        const outcome = attempt(() => parseCron(expression), /cron/i);
        if (outcome.ok) expect(outcome.value).toBe(expression);
      }),
      CRON_RUNS,
    );
  });
});
