import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { failureGroupId, normaliseFailure } from '../../src/activity/normalise.js';
import { testSecret } from '../support/secrets.js';

/** Words of failure messages: none of them a number or 7+ hex digits. */
const word = fc.oneof(
  fc.constantFrom('fatal:', 'could', 'not', 'read', 'from', 'remote', 'repository', 'exit', 'code', 'object', 'missing', 'timed', 'out', 'after', 'git', 'fetch', '(HTTP', 'status)', 'ref', 'refs/heads/main', 'at', 'bad'),
  fc.stringMatching(/^[g-z][a-z]{0,8}$/),
);
/** What differs from one occurrence of a failure to the next, by kind: a hole of a message is filled with values of one kind. */
const VARYING = {
  number: fc.nat().map(String),
  hash: fc.oneof(fc.stringMatching(/^[0-9a-f]{40}$/), fc.stringMatching(/^[0-9a-f]{7,12}$/)).filter((hex) => /[a-f]/.test(hex)),
  uuid: fc.uuid(),
  hex: fc.stringMatching(/^0x[0-9a-f]{1,8}$/),
  temp: fc.stringMatching(/^[a-z0-9]{1,12}$/).map((name) => `/tmp/forgesync-${name}/mirror.git`),
};
type Kind = keyof typeof VARYING;
const kind = fc.constantFrom(...(Object.keys(VARYING) as Kind[]));

/** A message with holes, and two ways of filling them: values of each hole's kind. */
const twoOccurrences = fc
  .array(fc.oneof({ weight: 3, arbitrary: word.map((text) => ({ text })) }, { weight: 1, arbitrary: kind.map((hole) => ({ hole })) }), { minLength: 1, maxLength: 12 })
  .chain((parts) => {
    const fills = () => fc.tuple(...parts.map((part) => ('text' in part ? fc.constant(part.text) : VARYING[part.hole]))).map((texts) => texts.join(' '));
    return fc.tuple(fills(), fills());
  });

describe('normaliseFailure', () => {
  it('groups two messages that differ only in numbers, hashes, ids and temp paths', () => {
    fc.assert(
      fc.property(twoOccurrences, ([a, b]) => {
        const first = normaliseFailure(a);
        expect(normaliseFailure(b)).toBe(first);
        expect(failureGroupId(first)).toMatch(/^[0-9a-f]{16}$/);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps messages that differ in words apart', () => {
    const words = fc.array(word, { minLength: 1, maxLength: 12 }).map((parts) => parts.join(' '));
    fc.assert(
      fc.property(words, words, (a, b) => {
        fc.pre(a !== b);
        expect(normaliseFailure(a)).not.toBe(normaliseFailure(b));
      }),
      { numRuns: 1000 },
    );
  });

  it('replaces what it finds with placeholders, credentials of URLs included', () => {
    const token = testSecret('UPSTREAM_TOKEN');
    const message = `git fetch https://bot:${token}@git.example.com/team/app.git failed at 3f2a9c1d after 12.5 s in /tmp/forgesync-x1/run (pid 0x1f, job 2b1e5c44-55aa-4c3e-9c4d-0e1f2a3b4c5d)`;
    const normal = normaliseFailure(message);
    expect(normal).toBe('git fetch https://<credentials>@git.example.com/team/app.git failed at <hash> after <n>.<n> s in <tmp> (pid <hex>, job <id>)');
    expect(normal).not.toContain(token);
    expect(normaliseFailure('exit code 128')).not.toBe(normaliseFailure('repository not found'));
  });

  it('gives the lines of a stderr tail in either order one group id', () => {
    const ours = 'fatal: git upload-pack: not our ref 4e906041214871ab66d104ecc956ff04c480e04b';
    const remote = 'fatal: remote error: upload-pack: not our ref 4e906041214871ab66d104ecc956ff04c480e04b';
    const id = (lines: string[]) => failureGroupId(normaliseFailure(`git clone failed with exit code 128: Cloning into bare repository '/tmp/m.git'... | ${lines.join(' | ')}`));
    expect(id([ours, remote])).toBe(id([remote, ours]));
    expect(id([ours, remote])).not.toBe(id([ours]));
  });
});
