import { describe, expect, it } from 'vitest';
import { InvalidGitProtocolError, InvalidRemoteUrlError } from '../../src/git/errors.js';
import { DEFAULT_PROTOCOLS, KNOWN_PROTOCOLS, parseProtocols, remoteTarget, urlHost, validateRemoteUrl } from '../../src/git/url.js';
import { testSecret } from '../support/secrets.js';

const all = KNOWN_PROTOCOLS;
const defaults = DEFAULT_PROTOCOLS;

describe('parseProtocols', () => {
  it('defaults to https,ssh', () => {
    expect([...parseProtocols(undefined)]).toEqual(['https', 'ssh']);
    expect([...parseProtocols('  ')]).toEqual(['https', 'ssh']);
  });

  it('parses a comma list, case and spaces ignored', () => {
    expect([...parseProtocols('HTTPS, file ,ssh,')].sort()).toEqual(['file', 'https', 'ssh']);
  });

  it('names an unknown member', () => {
    expect(() => parseProtocols('https,ext')).toThrow(InvalidGitProtocolError);
    expect(() => parseProtocols('https,ext')).toThrow(/unknown git protocol "ext".*https, ssh, http, git, file/);
  });
});

describe('validateRemoteUrl', () => {
  it.each([
    ['https://github.com/owner/repo.git', 'https://github.com/owner/repo.git'],
    ['https://GitHub.com/owner/repo', 'https://github.com/owner/repo'],
    ['https://alice@example.com/x.git', 'https://alice@example.com/x.git'],
    ['ssh://git@github.com:22/owner/repo.git', 'ssh://git@github.com:22/owner/repo.git'],
    ['git@github.com:owner/repo.git', 'git@github.com:owner/repo.git'],
    ['github.com:owner/repo', 'github.com:owner/repo'],
  ])('accepts %s', (url, normalised) => {
    expect(validateRemoteUrl(url, defaults)).toBe(normalised);
  });

  it('is idempotent', () => {
    for (const url of ['https://Example.com/a/../b', './relative/repo', 'file:///srv/x.git', 'git@h:o/r']) {
      const once = validateRemoteUrl(url, all);
      expect(validateRemoteUrl(once, all)).toBe(once);
    }
  });

  it('resolves local paths to absolute ones when file is allowed', () => {
    expect(validateRemoteUrl('./repos/a.git', all)).toBe(`${process.cwd()}/repos/a.git`);
    expect(validateRemoteUrl('/srv/git/../a.git', all)).toBe('/srv/a.git');
    expect(validateRemoteUrl('file:///srv/a.git', all)).toBe('file:///srv/a.git');
  });

  it.each([
    ['', /empty/],
    ['https://example.com/a b', /whitespace or control/],
    ['https://example.com/a\nb', /whitespace or control/],
    ['https://example.com/a\u0000', /whitespace or control/],
    ['-uhttps://example.com/x', /starts with "-"/],
    ['--upload-pack=touch /tmp/x', /whitespace|starts with "-"/],
    ['--upload-pack=touch', /starts with "-"/],
    ['ext::sh -c touch% /tmp/pwned', /whitespace|remote-helper/],
    ['ext::sh', /remote-helper/],
    ['fd::17', /remote-helper/],
    ['persistent-https::https://example.com/x', /remote-helper/],
    ['ftp://example.com/x', /scheme "ftp:\/\/" is not supported/],
    ['https://user:secret@example.com/x.git', /contains a password.*credential reference/],
    [`https://${testSecret('URL_TOKEN', 'ghp_')}@github.com/x`, /looks like an access token/],
    ['ssh://user:pw@example.com/x', /contains a password/],
    ['user:pw@example.com:x.git', /contains a password/],
    ['ssh://-oProxyCommand=touch%20x/repo', /host starts with "-"/],
    ['-oProxyCommand=x:repo', /starts with "-"/],
    ['me@-oProxyCommand=x:repo', /host starts with "-"/],
    ['host:-repo', /path starts with "-"/],
    ['https://', /not a well-formed/],
  ])('rejects %j', (url, message) => {
    expect(() => validateRemoteUrl(url, all)).toThrow(InvalidRemoteUrlError);
    expect(() => validateRemoteUrl(url, all)).toThrow(message);
  });

  it.each([
    ['ssh://%2DoProxyCommand=touch%20x/repo', /host starts with "-"/],
    ['ssh://git@%2Doproxycommand=x/repo', /host starts with "-"/],
    ['git://%2Dx/repo.git', /host starts with "-"/],
    ['ssh://%2D%2Dupload-pack=x@host/repo', /user name starts with "-"/],
    ['ssh://a%40evil.example@host/repo', /user name contains "@"/],
    ['ssh://host%2Fevil/repo', /not a host name/],
    ['ssh://host%3A2222/repo', /not a host name/],
    ['ssh://ho%st/repo', /not a host name|malformed/],
    ['ssh://$(touch%20x)/repo', /not a host name/],
    ['host;id:repo', /not a host name/],
  ])('decodes what git decodes before checking it: rejects %j', (url, message) => {
    expect(() => validateRemoteUrl(url, all)).toThrow(InvalidRemoteUrlError);
    expect(() => validateRemoteUrl(url, all)).toThrow(message);
  });

  it('names the host and port git will connect to', () => {
    expect(remoteTarget('ssh://git@%31%32%37.0.0.1:2222/x.git')).toEqual({ protocol: 'ssh', host: '127.0.0.1', port: 2222 });
    expect(remoteTarget('git@[example.com:2200]:x.git')).toEqual({ protocol: 'ssh', host: 'example.com', port: 2200 });
    expect(remoteTarget('git@[::1]:x.git')).toEqual({ protocol: 'ssh', host: '::1', port: 22 });
    expect(remoteTarget('https://0x7f000001/x')).toEqual({ protocol: 'https', host: '127.0.0.1', port: 443 });
    expect(remoteTarget('git://Example.com/x')).toEqual({ protocol: 'git', host: 'example.com', port: 9418 });
    expect(remoteTarget('http://[::1]:8080/x')).toEqual({ protocol: 'http', host: '::1', port: 8080 });
    expect(remoteTarget('/srv/x.git')).toBeUndefined();
  });

  it('rejects URLs longer than 2048 characters', () => {
    expect(() => validateRemoteUrl(`https://example.com/${'a'.repeat(2100)}`, all)).toThrow(/limit is 2048/);
  });

  it('never echoes a password in its message', () => {
    try {
      validateRemoteUrl('https://user:s3cr3t-value@example.com/x.git', all);
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cr3t-value');
      expect((error as InvalidRemoteUrlError).url).toBe('https://user:***@example.com/x.git');
    }
    expect(() => validateRemoteUrl('git:s3cr3t-value@example.com:x.git', all)).toThrow(/"git:\*\*\*@example.com:x.git"/);
  });

  it.each([
    ['file:///srv/x.git', /local repositories .* are not allowed; allowed protocols: https, ssh/],
    ['/srv/x.git', /local repositories/],
    ['../x.git', /local repositories/],
    ['http://example.com/x.git', /http URLs are not allowed/],
    ['git://example.com/x.git', /git URLs are not allowed/],
  ])('enforces the allowlist: %s', (url, message) => {
    expect(() => validateRemoteUrl(url, defaults)).toThrow(message);
  });

  it('lets ssh be turned off', () => {
    expect(() => validateRemoteUrl('git@github.com:o/r.git', new Set(['https']))).toThrow(/ssh URLs are not allowed/);
  });
});

describe('urlHost', () => {
  it.each([
    ['https://GitHub.com/o/r', 'github.com'],
    ['https://u@gitlab.example.com:8443/o/r', 'gitlab.example.com'],
    ['ssh://git@github.com:22/o/r', 'github.com'],
    ['git@github.com:o/r.git', 'github.com'],
    ['[::1]:o/r', '::1'],
    ['ssh://git@%67ithub.com/o/r', 'github.com'],
    ['/srv/git/x.git', 'local'],
    ['file:///srv/x.git', 'local'],
    ['', 'unknown'],
  ])('%s → %s', (url, host) => {
    expect(urlHost(url)).toBe(host);
  });
});
