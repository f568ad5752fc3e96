import { describe, expect, it } from 'vitest';
import { defaultEndpoint } from '../../src/lfs/endpoint.js';
import { isOid, parsePointer, pointerText } from '../../src/lfs/pointer.js';
import { parseBatchAnswer } from '../../src/lfs/upstream.js';

const OID = 'a'.repeat(62) + '0f';
const parse = (text: string) => parsePointer(Buffer.from(text, 'utf8'));
const pointer = (oid: string, size: string, extra = '') => `version https://git-lfs.github.com/spec/v1\n${extra}oid sha256:${oid}\nsize ${size}\n`;

describe('LFS pointers', () => {
  it('parses the pointer git-lfs writes, and one with an extension line', () => {
    expect(parse(pointerText({ oid: OID, size: 12345 }))).toEqual({ pointer: { oid: OID, size: 12345 } });
    expect(parse(pointer(OID, '0', 'ext-0-foo sha256:' + 'b'.repeat(64) + '\n'))).toEqual({ pointer: { oid: OID, size: 0 } });
  });

  it('is not fooled by blobs that are no pointer at all', () => {
    expect(parse('hello world\n')).toEqual({ notPointer: true });
    expect(parse(`${pointer(OID, '1')}${'x'.repeat(1100)}`)).toEqual({ notPointer: true });
    expect(parse(`version https://git-lfs.github.com/spec/v2\noid sha256:${OID}\nsize 1\n`)).toEqual({ notPointer: true });
  });

  it.each([
    ['an oid that climbs out of a directory', pointer('../../../../etc/passwd' + 'a'.repeat(42), '1')],
    ['an upper-case oid', pointer(OID.toUpperCase(), '1')],
    ['a short oid', pointer(OID.slice(1), '1')],
    ['a long oid', pointer(`${OID}0`, '1')],
    ['another hash algorithm', `version https://git-lfs.github.com/spec/v1\noid sha1:${'a'.repeat(40)}\nsize 1\n`],
    ['a negative size', pointer(OID, '-1')],
    ['a size with leading zeros', pointer(OID, '01')],
    ['a size past 2^53', pointer(OID, '9007199254740993')],
    ['a fractional size', pointer(OID, '1.5')],
    ['keys out of order', `version https://git-lfs.github.com/spec/v1\nsize 1\noid sha256:${OID}\n`],
    ['a repeated key', `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\noid sha256:${OID}\nsize 1\n`],
    ['no final newline', pointer(OID, '1').trimEnd()],
    ['a CR in a line', pointer(OID, '1\r')],
  ])('refuses %s (invalid, never a pointer)', (_what, text) => {
    expect(parse(text)).toHaveProperty('invalid');
  });

  it('accepts only 64 lower-case hex digits as an oid anywhere', () => {
    expect(isOid(OID)).toBe(true);
    for (const bad of ['..', OID.toUpperCase(), `${OID}/`, `../${OID}`, OID.slice(2), 42, undefined]) expect(isOid(bad)).toBe(false);
  });
});

describe('the LFS endpoint of an upstream', () => {
  it.each([
    ['https://github.com/org/repo.git', 'https://github.com/org/repo.git/info/lfs'],
    ['https://github.com/org/repo', 'https://github.com/org/repo.git/info/lfs'],
    ['https://user:secret@ghe.example.com:8443/org/repo.git/', 'https://ghe.example.com:8443/org/repo.git/info/lfs'],
    ['git@github.com:org/repo.git', 'https://github.com/org/repo.git/info/lfs'],
    ['ssh://git@github.com:22/org/repo.git', 'https://github.com/org/repo.git/info/lfs'],
  ])('%s has its LFS server at %s', (url, endpoint) => {
    expect(defaultEndpoint(url)?.href).toBe(endpoint);
  });

  it('a local path or file:// upstream has none', () => {
    expect(defaultEndpoint('/srv/git/repo.git')).toBeUndefined();
    expect(defaultEndpoint('file:///srv/git/repo.git')).toBeUndefined();
  });
});

describe('batch answers from an upstream', () => {
  const answer = (objects: unknown) => parseBatchAnswer(Buffer.from(JSON.stringify({ objects })), 'https://lfs.example/');

  it('keeps hrefs and headers of well-formed objects, and per-object errors', () => {
    const parsed = answer([
      { oid: OID, size: 1, actions: { download: { href: 'https://storage.example/x?sig=1', header: { 'X-Grant': 'g' } } } },
      { oid: 'b'.repeat(64), size: 1, error: { code: 404, message: 'Object does not exist' } },
    ]);
    expect(parsed.get(OID)).toEqual({ href: new URL('https://storage.example/x?sig=1'), headers: { 'X-Grant': 'g' } });
    expect(parsed.get('b'.repeat(64))).toEqual({ error: { code: 404, message: 'Object does not exist' } });
  });

  it('drops objects with a hostile oid and refuses hrefs and headers it cannot use safely', () => {
    const parsed = answer([
      { oid: '../../etc/passwd', size: 1, actions: { download: { href: 'https://storage.example/x' } } },
      { oid: OID, size: 1, actions: { download: { href: 'file:///etc/passwd' } } },
      { oid: 'c'.repeat(64), size: 1, actions: { download: { href: 'https://storage.example/x', header: { 'X-Grant': 'a\r\nInjected: yes' } } } },
    ]);
    expect([...parsed.keys()].sort()).toEqual([OID, 'c'.repeat(64)]);
    expect(parsed.get(OID)).toHaveProperty('error');
    expect(parsed.get('c'.repeat(64))).toHaveProperty('error');
  });

  it('fails on an answer that is not the batch API\'s', () => {
    expect(() => parseBatchAnswer(Buffer.from('<html>'), 'https://lfs.example/')).toThrow(/not JSON/);
    expect(() => parseBatchAnswer(Buffer.from('{}'), 'https://lfs.example/')).toThrow(/objects list/);
  });
});
