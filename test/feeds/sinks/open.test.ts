import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../../src/egress/policy.js';
import { InvalidInputError } from '../../../src/errors.js';
import { FileSinkOutsideRootError, InvalidSinkOptionError, UnsupportedSinkUrlError } from '../../../src/feeds/sinks/errors.js';
import { openSink, redactSinkUrl, validateSinkUrl } from '../../../src/feeds/sinks/open.js';

const policy = new EgressPolicy();
const options = { batch: 1, timeoutMs: 1000, policy, fileRoot: '/nonexistent' };
const refusal = (url: string): UnsupportedSinkUrlError => {
  try {
    validateSinkUrl(url);
  } catch (error) {
    expect(error).toBeInstanceOf(UnsupportedSinkUrlError);
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as UnsupportedSinkUrlError;
  }
  throw new Error(`${url} was accepted`);
};

describe('validateSinkUrl', () => {
  it('accepts the supported shapes', () => {
    expect(validateSinkUrl('https://hooks.example/forgesync?team=infra').hostname).toBe('hooks.example');
    expect(validateSinkUrl('http://10.0.0.5:8080/in').port).toBe('8080');
    expect(validateSinkUrl('nats://nats.internal:4222/forgesync.changes').pathname).toBe('/forgesync.changes');
    expect(validateSinkUrl('nats://nats.internal/a-b_c/d').protocol).toBe('nats:');
    expect(validateSinkUrl('file:///var/lib/forgesync/out').pathname).toBe('/var/lib/forgesync/out');
    expect(validateSinkUrl('file://localhost/srv/out').protocol).toBe('file:');
    expect(validateSinkUrl('file:/srv/out').pathname).toBe('/srv/out');
  });

  it('names the supported schemes for an unknown scheme, a missing one, or an empty URL', () => {
    for (const url of ['ftp://host/x', 'kafka://broker/topic', 'hooks.example/x', '']) {
      expect(refusal(url).message).toMatch(/expected http:\/\/…, https:\/\/… \(a webhook\), nats:\/\/host\[:port\]\/<subject> \(JetStream\) or file:\/\/\/<absolute directory>/);
    }
    expect(refusal('ftp://host/x').message).toMatch(/the scheme "ftp" is not supported/);
  });

  it('refuses a malformed URL', () => {
    expect(refusal('https://exa mple/').message).toMatch(/not a well-formed URL/);
    expect(refusal('http://').message).toMatch(/not a well-formed URL|names no host/);
  });

  it('refuses a user name or password, pointing at a feed secret named with --secret, without repeating them', () => {
    const password = randomBytes(9).toString('hex');
    for (const url of [`https://bot:${password}@hooks.example/in`, `https://${password}@hooks.example/in`, `nats://${password}@127.0.0.1:4222/a`]) {
      const error = refusal(url);
      expect(error.message).toMatch(/carries a user name or password.*feed secret.*--secret,/);
      expect(error.message).not.toContain(password);
      expect(error.url).not.toContain(password);
    }
  });

  it('refuses NATS URLs without a usable subject', () => {
    expect(refusal('nats://127.0.0.1:4222').message).toMatch(/names no subject/);
    expect(refusal('nats://127.0.0.1:4222/a.*.b').message).toMatch(/wildcard/);
    expect(refusal('nats://127.0.0.1:4222/a.%3E').message).toMatch(/wildcard/);
    expect(refusal('nats://127.0.0.1:4222/a%09b').message).toMatch(/whitespace/);
    expect(refusal('nats://127.0.0.1:4222/.a').message).toMatch(/empty token/);
    expect(refusal('nats://127.0.0.1:4222/a?stream=x').message).toMatch(/no query/);
  });

  it('refuses file URLs that are relative or name another host', () => {
    expect(refusal('file:out/dir').message).toMatch(/not absolute/);
    expect(refusal('file://fileserver/share').message).toMatch(/names the host "fileserver"/);
  });
});

describe('redactSinkUrl', () => {
  it('hides user info and token-like parameters, and keeps the rest', () => {
    const secret = randomBytes(9).toString('hex');
    expect(redactSinkUrl(`https://bot:${secret}@hooks.example/in?token=${secret}&team=infra`)).toBe('https://***@hooks.example/in?token=***&team=infra');
    expect(redactSinkUrl(`https://${secret}@hooks.example/in`)).toBe('https://***@hooks.example/in');
    expect(redactSinkUrl(`https://hooks.example/in?sig=${secret}&api_key=${secret}`)).toBe('https://hooks.example/in?sig=***&api_key=***');
    expect(redactSinkUrl('nats://127.0.0.1:4222/forgesync.changes')).toBe('nats://127.0.0.1:4222/forgesync.changes');
    expect(redactSinkUrl(`https://u:${secret}@exa mple/`)).not.toContain(secret);
  });
});

describe('openSink', () => {
  it('refuses an unknown scheme and bad options with typed errors', async () => {
    await expect(openSink('smtp://mail/x', options)).rejects.toBeInstanceOf(UnsupportedSinkUrlError);
    await expect(openSink('https://hooks.example/in', { ...options, batch: 0 })).rejects.toBeInstanceOf(InvalidSinkOptionError);
    await expect(openSink('https://hooks.example/in', { ...options, timeoutMs: -1 })).rejects.toBeInstanceOf(InvalidSinkOptionError);
    await expect(openSink('file:///tmp/x', { ...options, maxFileBytes: 0 })).rejects.toBeInstanceOf(InvalidSinkOptionError);
  });

  it('opens a file sink only with a file root, and only for a directory inside it', async () => {
    const { fileRoot: _root, ...rootless } = options;
    await expect(openSink('file:///nonexistent/out', rootless)).rejects.toThrow(/file sink needs the feed file root/);
    for (const url of ['file:///tmp/out', 'file:///nonexistent-sibling/out', 'file:///nonexistent/../etc', 'file:///nonexistent/a/%2e%2e/%2e%2e/etc', 'file:///']) {
      const refusal = openSink(url, options);
      await expect(refusal, url).rejects.toBeInstanceOf(FileSinkOutsideRootError);
      await expect(refusal, url).rejects.toThrow(/the feed file root \/nonexistent \(FORGESYNC_FEED_FILE_ROOT\).*use file:\/\/\/nonexistent\/<directory>/);
    }
    await (await openSink('file:///nonexistent', options)).close();
  });

  it('opens each kind without connecting or writing', async () => {
    for (const [url, kind] of [
      ['https://hooks.invalid/in', 'http'],
      ['nats://nats.invalid:4222/forgesync.changes', 'nats'],
      ['file:///nonexistent/forgesync-never-created', 'file'],
    ] as const) {
      const sink = await openSink(url, options);
      expect(sink.kind).toBe(kind);
      await sink.close();
    }
  });
});
