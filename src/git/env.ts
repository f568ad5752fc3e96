import { tmpdir } from 'node:os';
import { redactSecrets, redactUrl } from '../util/redact.js';
import { InvalidGitOptionError } from './errors.js';

/** `GIT_SSH_COMMAND` for every git process: never prompt, pin host keys on first use. */
export const SSH_COMMAND = 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new';

/** Variables copied from forgesync's own environment (nothing else is). */
const PASSED_THROUGH = [
  'PATH',
  'TMPDIR',
  'SSH_AUTH_SOCK',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
];

/** The value of the `Authorization` header git sends when a token is given. */
export function authorizationValue(token: string): string {
  return `Basic ${Buffer.from(`x-access-token:${token}`, 'utf8').toString('base64')}`;
}

/** Refuses tokens that could inject headers or that are too short to redact. */
export function checkToken(token: string | undefined): void {
  if (token === undefined) return;
  // eslint-disable-next-line no-control-regex
  if (typeof token !== 'string' || token.length < 4 || /[\u0000-\u001f\u007f\s]/.test(token)) {
    throw new InvalidGitOptionError(
      'the access token must be at least 4 characters without whitespace or control characters; check the credential reference',
    );
  }
}

/**
 * Builds a git environment from scratch: no system/global config, hooks, prompts,
 * credential helpers or askpass programs; only the allowed protocols; and, when a
 * token is given, an `Authorization` header passed as config through the environment
 * (`GIT_CONFIG_COUNT`), so that it never reaches argv or any file.
 */
export function buildGitEnv(options: {
  protocols: ReadonlySet<string>;
  token?: string;
  /** URL prefix (`https://host:port/`) the token header is limited to; every request when absent. */
  tokenScope?: string;
  fsckObjects?: boolean;
}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of PASSED_THROUGH) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  env.TMPDIR ??= tmpdir();
  Object.assign(env, {
    HOME: '/nonexistent',
    XDG_CONFIG_HOME: '/nonexistent',
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    // Empty: git skips askpass entirely and, prompts being disabled, fails fast.
    GIT_ASKPASS: '',
    GIT_SSH_COMMAND: SSH_COMMAND,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_ALLOW_PROTOCOL: [...options.protocols].join(':'),
    GIT_OPTIONAL_LOCKS: '0',
  });
  const config: Array<[string, string]> = [
    ['core.hooksPath', '/dev/null'],
    ['core.askPass', ''],
    ['core.fsmonitor', 'false'],
    ['credential.helper', ''],
    ['transfer.credentialsInUrl', 'die'],
    ['gc.autoDetach', 'false'],
    ['protocol.allow', 'never'],
    ...[...options.protocols].map((protocol): [string, string] => [`protocol.${protocol}.allow`, 'always']),
  ];
  if (options.fsckObjects) config.push(['transfer.fsckObjects', 'true']);
  if (options.token !== undefined) {
    checkToken(options.token);
    const key = options.tokenScope ? `http.${options.tokenScope}.extraHeader` : 'http.extraHeader';
    config.push([key, `Authorization: ${authorizationValue(options.token)}`]);
  }
  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([key, value], index) => {
    env[`GIT_CONFIG_KEY_${index}`] = key;
    env[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  return env;
}

/**
 * The prefix an access token for `url` may be sent to: its scheme, host and port, so
 * that a redirect to another host does not carry the token along. Undefined for
 * non-HTTP URLs (the token is useless there anyway).
 */
export function tokenScopeFor(url: string): string | undefined {
  if (!/^https?:\/\//i.test(url)) return undefined;
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}/`;
  } catch {
    return undefined;
  }
}

/**
 * Returns a function that scrubs text before it is shown: the token, its encoded
 * header value, any `Authorization:` header and any password in a URL.
 */
export function makeRedactor(token: string | undefined): (text: string) => string {
  const secrets = token ? [token, authorizationValue(token), authorizationValue(token).slice('Basic '.length)] : [];
  return (text) =>
    redactSecrets(text, secrets)
      .replace(/(authorization:\s*)[^\r\n]*/gi, '$1***')
      .replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"<>]+/gi, (url) => redactUrl(url));
}
