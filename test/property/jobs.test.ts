import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJobsUrl } from '../../src/jobs/bullmq/connection.js';
import type { Job } from '../../src/jobs/types.js';
import { validateJob } from '../../src/jobs/validate.js';
import { attempt, check, hostileString, piece, unknownValue } from './arbitraries.js';

/** Cases per property of this file. */
const JOB_RUNS = 20_000;
const JOBS_URL_RUNS = 20_000;

const KIND = /^[a-z][a-z0-9-]{0,39}$/;
const KEY = /^[\x21-\x7e]{1,200}$/;

const field = fc.oneof(
  { weight: 3, arbitrary: hostileString({ maxLength: 8, long: 400 }) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,45}$/) },
  { weight: 2, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,210}$/) },
);
const payload = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(hostileString({ maxLength: 4 }), fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null))),
  fc.dictionary(fc.string({ maxLength: 4 }), unknownValue, { maxKeys: 3 }),
  unknownValue,
);

function expectValidJob(job: Job): void {
  expect(typeof job.kind).toBe('string');
  expect(job.kind).toMatch(KIND);
  expect(typeof job.key).toBe('string');
  expect(job.key).toMatch(KEY);
  if (job.fairness !== undefined) {
    expect(typeof job.fairness).toBe('string');
    expect(job.fairness.length).toBeLessThanOrEqual(255);
  }
  if (job.payload !== undefined) {
    expect(job.payload !== null && typeof job.payload === 'object' && !Array.isArray(job.payload)).toBe(true);
    for (const value of Object.values(job.payload)) expect(value === null || ['string', 'number', 'boolean'].includes(typeof value)).toBe(true);
  }
}

describe(`validateJob (${JOB_RUNS} cases per property)`, () => {
  it('accepts a job only with a kind and key of the documented shapes, a short fairness bucket and a flat payload; else refuses naming the job field', () => {
    const job = fc.record(
      { kind: field, key: field, fairness: fc.oneof(fc.constant(undefined), hostileString({ maxLength: 8, long: 300 })), payload },
      { requiredKeys: ['kind', 'key'] },
    );
    check(
      fc.property(job, (candidate) => {
        const outcome = attempt(() => validateJob(candidate as Job), /job/i);
        if (outcome.ok) expectValidJob(candidate as Job);
      }),
      JOB_RUNS,
    );
  });
});

/** Whether a URL parser (or a reader) sees a password in `url`: `scheme://user:password@…`. */
function carriesPassword(url: string): boolean {
  try {
    if (new URL(url).password !== '') return true;
  } catch {
    // not a URL: judged by its shape below
  }
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*:[^/?#]*@/i.test(url);
}

describe(`parseJobsUrl (${JOBS_URL_RUNS} cases per property)`, () => {
  const password = fc.stringMatching(/^[A-Za-z0-9]{8,16}$/).map((text) => `Pw${text}`);
  const jobsUrl = fc
    .tuple(
      fc.constantFrom('redis://', 'rediss://', 'REDIS://', 'http://', '', 'redis:', 'redis:///'),
      fc.oneof(fc.constant(''), fc.stringMatching(/^[a-z]{0,6}$/).map((user) => `${user}:`)),
      password,
      fc.oneof(fc.constantFrom('localhost', '127.0.0.1', '[::1]', 'redis.internal', ''), hostileString({ maxLength: 4 })),
      fc.oneof(fc.constant(''), fc.constantFrom(':6379', ':0', ':99999', ':x', ':')),
      fc.oneof(fc.constant(''), fc.constantFrom('/0', '/15', '/x', '/'), hostileString({ maxLength: 4 })),
      fc.oneof(
        fc.constant(''),
        fc.array(fc.tuple(fc.constantFrom('prefix', 'Prefix', 'db', 'password', ''), fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.{}-]{0,110}$/), piece, hostileString({ maxLength: 4 }))), { maxLength: 3 }).map(
          (pairs) => `?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`,
        ),
      ),
    )
    .map(([scheme, user, pw, host, port, path, query]) => {
      const url = `${scheme}${user === '' ? '' : `${user}${pw}@`}${host}${port}${path}${query}`;
      return { pw, url, hasPassword: user !== '' && carriesPassword(url) };
    });

  it('returns a URL without its query, a prefix of the documented characters and a shown URL without the password, or refuses naming the jobs URL without echoing the password', () => {
    check(
      fc.property(fc.oneof(jobsUrl, hostileString({ maxLength: 12 }).map((url) => ({ url, pw: '', hasPassword: false }))), ({ url, pw, hasPassword }) => {
        const outcome = attempt(() => parseJobsUrl(url), /jobs URL/i);
        if (!outcome.ok) {
          if (hasPassword) expect(outcome.error.message).not.toContain(pw);
          return;
        }
        const { connectUrl, shown, prefix } = outcome.value;
        expect(new URL(connectUrl).search).toBe('');
        expect(prefix).toMatch(/^[A-Za-z0-9_.{}-]{1,100}$/);
        if (hasPassword) expect(shown).not.toContain(pw);
      }),
      JOBS_URL_RUNS,
    );
  });
});
