import { tmpdir } from 'node:os';
import { redactSecrets, redactUrl } from '../util/redact.js';
import { InvalidGitOptionError } from './errors.js';

/** How ssh runs for git: forgesync's own files, never the service user's `~/.ssh` or agent. */
export interface SshSettings {
  /**
   * forgesync's known_hosts (`<dataDir>/ssh/known_hosts`): host keys are pinned
   * there on first use. Undefined: no host is trusted (ssh fails closed).
   */
  knownHostsFile: string | undefined;
  /** The one private key ssh offers; undefined: none. */
  keyFile: string | undefined;
  /** Let ssh use the agent at SSH_AUTH_SOCK (passed to git only then). */
  agent: boolean;
}

/** Where one ssh connection goes: the checked address for the host git names (see sshCommand). */
export interface SshPin {
  host: string;
  port: number;
  address: string;
}

/** ssh settings of a runner that was given none: no key, no agent, no trusted host. */
export const NO_SSH: SshSettings = { knownHostsFile: undefined, keyFile: undefined, agent: false };

/**
 * `GIT_SSH_COMMAND`: never prompt; no configuration but this (`-F /dev/null`
 * skips ~/.ssh/config and /etc/ssh/ssh_config, which ssh would otherwise read
 * from the service user's home whatever HOME says); host keys only from, and
 * pinned on first use in, forgesync's own known_hosts; only the configured
 * key (`IdentityFile none` without one: not ~/.ssh/id_*); the agent only when
 * allowed. With a pin, ssh connects to the checked address (`HostName`) and
 * files the host key under the name (`HostKeyAlias`, with the port as
 * known_hosts writes it), so pinning changes nothing in known_hosts. git runs
 * it through a shell: every value is quoted.
 */
export function sshCommand(ssh: SshSettings, pin?: SshPin): string {
  const options: Array<[string, string]> = [
    ['BatchMode', 'yes'],
    ['StrictHostKeyChecking', ssh.knownHostsFile ? 'accept-new' : 'yes'],
    ['UserKnownHostsFile', ssh.knownHostsFile ? sshPathValue(ssh.knownHostsFile) : '/dev/null'],
    ['GlobalKnownHostsFile', '/dev/null'],
    ['IdentityFile', ssh.keyFile ? sshPathValue(ssh.keyFile) : 'none'],
    // With the agent and no key file, the agent's keys are the identities meant: IdentitiesOnly
    // would filter them all out. Otherwise only the key file is offered, even by an agent.
    ['IdentitiesOnly', ssh.agent && !ssh.keyFile ? 'no' : 'yes'],
    ...(ssh.agent ? [] : [['IdentityAgent', 'none'] as [string, string]]),
    ['ClearAllForwardings', 'yes'],
  ];
  if (pin) options.push(['HostName', pin.address], ['HostKeyAlias', pin.port === 22 ? pin.host : `[${pin.host}]:${pin.port}`]);
  return ['ssh', '-F', '/dev/null', ...options.flatMap(([key, value]) => ['-o', shellQuote(`${key}=${value}`)])].join(' ');
}

/**
 * Characters ssh would read in a path option as something else: `%` tokens,
 * `${…}` variables, quotes and escapes of its own tokenizer, a leading `~`.
 */
const SSH_PATH_UNSAFE = /[%$"'\\\n\r\t]|^~/;

/** Why `path` cannot be given to ssh as it is, or undefined when it can. */
export function sshPathProblem(path: string): string | undefined {
  return SSH_PATH_UNSAFE.test(path) ? `ssh would expand or split ${JSON.stringify(path)} (it contains %, $, a quote, a backslash or a leading ~); use a path without them` : undefined;
}

/** A path as an ssh option value: double-quoted for ssh's own tokenizer when it holds spaces (sshPathProblem rules out the rest). */
function sshPathValue(path: string): string {
  return path.includes(' ') ? `"${path}"` : path;
}

/**
 * An `http.curloptResolve` entry: curl connects to `host:port` at these
 * addresses (the checked ones, in order) instead of resolving the name.
 */
export function curlResolveEntry(host: string, port: number, addresses: ReadonlyArray<{ address: string; family: 4 | 6 }>): string {
  return `${host}:${port}:${addresses.map(({ address, family }) => (family === 6 ? `[${address}]` : address)).join(',')}`;
}

/** One shell word: single-quoted unless plainly safe. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Variables copied from forgesync's own environment (nothing else is; SSH_AUTH_SOCK only when sshAgent allows it). */
const PASSED_THROUGH = [
  'PATH',
  'TMPDIR',
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
 * credential helpers or askpass programs; only the allowed protocols; no redirect
 * followed; connections pinned where `curlResolve` / `sshPin` say; ssh as
 * {@link sshCommand} runs it; and, when a token is given, an `Authorization`
 * header passed as config through the environment (`GIT_CONFIG_COUNT`), so that
 * it never reaches argv or any file.
 */
export function buildGitEnv(options: {
  /** The transports this git process may use (the runner narrows them to the prepared remote's). */
  protocols: ReadonlySet<string>;
  token?: string;
  /** URL prefix (`https://host:port/`) the token header is limited to; every request when absent. */
  tokenScope?: string;
  fsckObjects?: boolean;
  /** `http.curloptResolve` entries (`host:port:address,…`): where curl connects instead of resolving. */
  curlResolve?: readonly string[];
  ssh?: SshSettings;
  sshPin?: SshPin;
}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of PASSED_THROUGH) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  const ssh = options.ssh ?? NO_SSH;
  if (ssh.agent && process.env.SSH_AUTH_SOCK) env.SSH_AUTH_SOCK = process.env.SSH_AUTH_SOCK;
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
    GIT_SSH_COMMAND: sshCommand(ssh, options.sshPin),
    GIT_SSH_VARIANT: 'ssh',
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
    // Never: forgesync resolves redirects itself, checking every hop and where the token
    // may go, and gives git the final URL (see resolveHttpRemote in remote-refs.ts).
    ['http.followRedirects', 'false'],
    ...(options.curlResolve ?? []).map((entry): [string, string] => ['http.curloptResolve', entry]),
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
