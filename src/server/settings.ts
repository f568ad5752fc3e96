import { integer, setting, text } from '../config/setting.js';
import { parseNetworks } from '../egress/networks.js';

/** `https?://host[:port][/path]` without a trailing slash, query or fragment (links are built by appending `/github/…`). */
function publicUrl(value: unknown): string {
  const given = text()(value).trim();
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new Error('must be an absolute URL like https://forgesync.example.com or https://example.com/forgesync');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('must be an http:// or https:// URL');
  if (url.username || url.password) throw new Error('must not carry credentials');
  if (url.search || url.hash || given.includes('?') || given.includes('#')) throw new Error('must not have a query or fragment');
  if (given.endsWith('/')) throw new Error('must not end with a slash (links append /github/…)');
  return given;
}

/** Settings of the HTTP service of `forgesync serve`. */
export const serverSettings = {
  port: setting({ key: 'port', env: 'FORGESYNC_PORT', default: '8080', doc: 'HTTP port of forgesync serve.', parse: integer(0, 65535) }),
  host: setting({
    key: 'host',
    env: 'FORGESYNC_HOST',
    defaultDoc: '`0.0.0.0` (`127.0.0.1` when no admin token is set)',
    doc: 'Address forgesync serve binds.',
    parse: text(),
  }),
  allowedHosts: setting({
    key: 'allowedHosts',
    env: 'FORGESYNC_ALLOWED_HOSTS',
    defaultDoc: '`localhost`, `127.0.0.1`, `::1`, this machine\'s host name and the bind address',
    doc: 'Host names the HTTP service answers to (the `Host` header; others get 421, against DNS rebinding): a comma list; add the names webhooks and browsers use.',
    parse: (value: unknown) =>
      text()(value)
        .split(',')
        .map((host) => host.trim().toLowerCase())
        .filter((host) => host !== ''),
  }),
  trustProxy: setting({
    key: 'trustProxy',
    env: 'FORGESYNC_TRUST_PROXY',
    defaultDoc: 'none: `X-Forwarded-*` headers are ignored',
    doc:
      'Reverse proxies in front of forgesync serve: a comma list of addresses or CIDRs. Only from these does it take the client address ' +
      '(`X-Forwarded-For`, which failed authentications are limited by), the scheme (`X-Forwarded-Proto`) and the host name (`X-Forwarded-Host`, checked against `allowedHosts`).',
    parse: parseNetworks,
  }),
  publicUrl: setting({
    key: 'publicUrl',
    env: 'FORGESYNC_PUBLIC_URL',
    defaultDoc: 'none: the scheme and (allowed) `Host` each request came by',
    doc:
      'The base URL clients reach forgesync serve by (`https?://host[:port][/path]`, no trailing slash, no query): the GitHub-compatible API points every link it answers ' +
      '(`url`, `*_url`, `Link` headers, attachments) below it, at `<base>/github/…`.',
    parse: publicUrl,
  }),
  adminToken: setting({
    key: 'adminToken',
    env: 'FORGESYNC_ADMIN_TOKEN',
    doc: 'Bearer token of the admin API and the dashboard actions; when unset, `serve` generates one in `<dataDir>/admin-token`.',
    parse: text({ minLength: 16 }),
  }),
  readToken: setting({ key: 'readToken', env: 'FORGESYNC_READ_TOKEN', doc: 'Optional read-only bearer token.', parse: text({ minLength: 16 }) }),
};
