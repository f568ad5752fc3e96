import { stat } from 'node:fs/promises';
import { EgressPolicy } from '../egress/policy.js';
import { DEFAULT_PROTOCOLS } from '../git/url.js';
import type { Logger } from '../logging/logger.js';
import { appApiUrlFor, isAppEntry, parseApiUrl, parseAppIdentity, type AppIdentity } from './app.js';
import { CredentialUnavailableError, FeedSecretUnavailableError, InvalidCredentialRefError } from './errors.js';
import { BINDING_FORMS, boundTo, hostOf, parseHostBinding, type HostBinding } from './hosts.js';
import { InstallationTokens } from './installation-tokens.js';
import { readRegularFile } from './read-file.js';
import { parseReaders, type ScopedReader } from './readers.js';

/** A credential the operator defined: a token, or a GitHub App installation whose tokens forgesync mints; and the hosts it may be sent to. */
export type Credential = TokenCredential | AppCredential;

export interface TokenCredential {
  kind: 'token';
  name: string;
  token: string;
  hosts: readonly HostBinding[];
}

export interface AppCredential {
  kind: 'app';
  name: string;
  app: AppIdentity;
  /** Where its tokens are minted when the operator named it (`apiUrl`); otherwise derived from the URL asked for (appApiUrlFor). */
  apiUrl: string | null;
  hosts: readonly HostBinding[];
}

/** What may be shown of a credential: its name, kind and hosts (never a secret). */
export interface CredentialSummary {
  name: string;
  kind: Credential['kind'];
  hosts: readonly HostBinding[];
}

/** A token resolved for one URL, and the test for any other URL it might be sent to (a redirect). */
export interface BoundToken {
  token: string;
  /** Whether the credential is bound to the host (and scheme and port) `url` points at, and the token may go over that scheme. */
  allows(url: URL): boolean;
}

/** A credential that passed tokenFor's tests for one URL: the test of every URL its token may go to, and for an App where it mints. */
type CheckedUse =
  | { kind: 'token'; credential: TokenCredential; allows: (url: URL) => boolean }
  | { kind: 'app'; credential: AppCredential; allows: (url: URL) => boolean; apiUrl: string };

/** A secret the operator defined with the hosts it is bound to, as read: a credential's token or a feed secret. */
interface BoundSecret {
  name: string;
  secret: string;
  hosts: readonly HostBinding[];
}

/** A feed secret the operator defined: a webhook signing secret or NATS token, and the sink hosts it may be used with. */
export type FeedSecret = BoundSecret;

/** What the secrets file defines: credentials, and feed secrets (keys `feed:<name>`), each by lower-case name; readers (key `readers`). */
interface SecretsFile {
  credentials: Map<string, Credential>;
  feedSecrets: Map<string, FeedSecret>;
  readers: readonly ScopedReader[];
}

/** The secrets file's key of the scoped readers (so no credential is named `readers` there). */
const READERS_KEY = 'readers';

const emptySecrets = (): SecretsFile => ({ credentials: new Map(), feedSecrets: new Map(), readers: [] });

/** The two kinds of entries, as the secrets file and the environment name them. */
const KINDS = {
  credential: { label: 'credential', field: 'token', keyPrefix: '', envPrefix: 'FORGESYNC_CREDENTIAL_' },
  feedSecret: { label: 'feed secret', field: 'secret', keyPrefix: 'feed:', envPrefix: 'FORGESYNC_FEED_SECRET_' },
} as const;
type Kind = (typeof KINDS)[keyof typeof KINDS];

/** Credential names: also the suffix of their environment variables, so letters, digits and "_". */
const NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
// eslint-disable-next-line no-control-regex
const BAD_TOKEN = /[\u0000-\u0020\u007f]/;

/**
 * Checks that `reference` names a credential (never a secret, never where to
 * find one: `env:` and `file:` references are refused).
 * @throws InvalidCredentialRefError
 */
export function validateCredentialName(reference: string): string {
  if (typeof reference !== 'string' || !NAME.test(reference)) throw new InvalidCredentialRefError(String(reference));
  return reference;
}

/**
 * The credentials the operator defined, in the secrets file
 * (FORGESYNC_SECRETS_FILE, JSON `{ "<name>": { "token": "…", "hosts": ["github.com",
 * "ghe.example.com:8443"] } }`) and in the environment
 * (`FORGESYNC_CREDENTIAL_<NAME>=<token>` with `FORGESYNC_CREDENTIAL_<NAME>_HOSTS=host[:port],…`;
 * see {@link HostBinding} for what a binding allows);
 * names compare case-insensitively, and the environment wins. A token is handed
 * out only for a URL whose host it is bound to. Feed secrets (the signing
 * secrets and tokens of feeds' sinks) are defined alike: `"feed:<name>": {
 * "secret": "…", "hosts": […] }` in the file (a credential name has no colon),
 * or `FORGESYNC_FEED_SECRET_<NAME>` with `FORGESYNC_FEED_SECRET_<NAME>_HOSTS`.
 * Scoped readers are the file's `"readers"` object (see credentials/readers.ts).
 * A credential may instead be a GitHub App installation: `{ "appId", "privateKey"
 * (PEM), "installationId", "hosts", "apiUrl"? }`, or `FORGESYNC_CREDENTIAL_<NAME>_APP_ID`,
 * `_PRIVATE_KEY_FILE` (a path), `_INSTALLATION_ID`, `_HOSTS` and `_API_URL`?;
 * `tokenFor` then hands out installation tokens minted on the bound API host
 * and refreshed before they expire (credentials/installation-tokens.ts).
 *
 * The secrets file is read only as a regular file of at most 1 MiB, without
 * blocking the event loop, and again only when it changed. What is wrong with
 * it is logged (never its content); callers only ever see
 * CredentialUnavailableError (FeedSecretUnavailableError), the same for every failure.
 */
export class CredentialStore {
  #file: { key: string; secrets: SecretsFile } | undefined;
  #reported: string | undefined;
  /** The installation tokens of App credentials, by credential, API URL and App identity (a changed definition gets new ones). */
  readonly #installations = new Map<string, InstallationTokens>();

  constructor(
    private readonly options: {
      secretsFile: string | undefined;
      logger: Logger;
      env?: NodeJS.ProcessEnv;
      /** The protocols FORGESYNC_GIT_PROTOCOLS allows (default https,ssh): a token goes over plain http or git:// only where they list it. */
      protocols?: ReadonlySet<string>;
      /** The policy an App credential's token requests go through (the importer's client uses the same); default: the built-in policy. */
      egress?: EgressPolicy;
    },
  ) {}

  /**
   * The token of credential `name` for `url`, with the hosts it is bound to.
   * @throws InvalidCredentialRefError for a malformed name; CredentialUnavailableError for anything else.
   */
  async tokenFor(name: string, url: string): Promise<BoundToken> {
    const use = await this.#checkedUse(name, url);
    if (use.kind === 'token') return { token: use.credential.token, allows: use.allows };
    const installation = this.#installationOf(use.credential, use.apiUrl, use.allows);
    try {
      await installation.fresh();
    } catch {
      // Logged by InstallationTokens (GitHub's status and message); callers see what every unusable credential gives.
      throw new CredentialUnavailableError(name, hostOf(url));
    }
    // Read at every request: a long run sends the token current then, refreshed before it expires.
    return {
      get token() {
        return installation.current();
      },
      allows: use.allows,
    };
  }

  /**
   * Whether credential `name` may be used for `url`, tested as tokenFor tests it before it hands out
   * (or mints) a token, without contacting any server: an App's token is not minted.
   * @throws InvalidCredentialRefError for a malformed name; CredentialUnavailableError for anything else.
   */
  async checkUse(name: string, url: string): Promise<void> {
    await this.#checkedUse(name, url);
  }

  /** What tokenFor needs once `name` passed every test for `url`: the credential, the test of its URLs, and for an App where it mints. */
  async #checkedUse(name: string, url: string): Promise<CheckedUse> {
    validateCredentialName(name);
    const credential = (await this.#lookup(name.toLowerCase())) ?? null;
    let target: URL | undefined;
    try {
      target = toUrl(url);
    } catch {
      target = undefined;
    }
    const hosts = credential?.hosts ?? [];
    // The one test of every URL the token may go to (the first and every redirect hop, API, downloads and git alike).
    const allows = (other: URL): boolean => this.#carries(other) && boundTo(hosts, other);
    if (!credential || !target || !allows(target)) throw new CredentialUnavailableError(name, hostOf(url));
    if (credential.kind === 'token') return { kind: 'token', credential, allows };
    const apiUrl = credential.apiUrl ?? appApiUrlFor(target);
    if (!allows(new URL(apiUrl))) {
      this.#report(credential.name, `GitHub App credential "${credential.name}" is not bound to ${new URL(apiUrl).host}, where its installation tokens are minted`);
      throw new CredentialUnavailableError(name, hostOf(url));
    }
    return { kind: 'app', credential, allows, apiUrl };
  }

  /** The credentials defined now, by name: kind and hosts only (for listing; never a secret). */
  async list(): Promise<CredentialSummary[]> {
    const env = this.options.env ?? process.env;
    const names = new Set((await this.#fromFile()).credentials.keys());
    for (const variable of Object.keys(env)) {
      const name = /^FORGESYNC_CREDENTIAL_([A-Za-z][A-Za-z0-9_]{0,63}?)(?:_APP_ID)?$/.exec(variable)?.[1];
      if (name && !/_(HOSTS|PRIVATE_KEY_FILE|INSTALLATION_ID|API_URL)$/.test(name)) names.add(name.toLowerCase());
    }
    const summaries: CredentialSummary[] = [];
    for (const name of [...names].sort()) {
      const credential = await this.#lookup(name);
      if (credential) summaries.push({ name: credential.name, kind: credential.kind, hosts: credential.hosts });
    }
    return summaries;
  }

  #installationOf(credential: AppCredential, apiUrl: string, allows: (url: URL) => boolean): InstallationTokens {
    const { app } = credential;
    const key = [credential.name, apiUrl, app.appId, app.installationId, app.keyFingerprint].join('\u0000');
    let installation = this.#installations.get(key);
    if (!installation) {
      for (const other of this.#installations.keys()) if (other.startsWith(`${credential.name}\u0000${apiUrl}\u0000`)) this.#installations.delete(other);
      installation = new InstallationTokens({ credential: credential.name, identity: app, apiUrl, policy: this.options.egress ?? new EgressPolicy(), allows, logger: this.options.logger });
      this.#installations.set(key, installation);
    }
    return installation;
  }

  /** Whether a token may travel over `url`'s scheme at all: https (TLS) and ssh always, plain http and git:// only when the configured protocols list them. */
  #carries(url: URL): boolean {
    const scheme = url.protocol.slice(0, -1);
    if (scheme === 'https' || scheme === 'ssh') return true;
    return (scheme === 'http' || scheme === 'git') && (this.options.protocols ?? DEFAULT_PROTOCOLS).has(scheme);
  }

  /**
   * The secret of feed secret `name` for a feed whose sink is `url` (a NATS
   * URL with its port written out), if it is bound to that sink's host.
   * @throws FeedSecretUnavailableError for every reason, a malformed name included.
   */
  async feedSecretFor(name: string, url: URL): Promise<string> {
    if (typeof name !== 'string' || !NAME.test(name)) throw new FeedSecretUnavailableError();
    const key = name.toLowerCase();
    const entry = this.#fromEnv(KINDS.feedSecret, key) ?? (await this.#fromFile()).feedSecrets.get(key);
    if (!entry || !boundTo(entry.hosts, url)) throw new FeedSecretUnavailableError();
    return entry.secret;
  }

  /** The scoped readers the secrets file defines now (none when it is unset or unusable: that is logged). */
  async readers(): Promise<readonly ScopedReader[]> {
    return (await this.#fromFile()).readers;
  }

  async #lookup(name: string): Promise<Credential | undefined> {
    const app = await this.#appFromEnv(name);
    if (app) return app;
    const entry = this.#fromEnv(KINDS.credential, name);
    return entry ? { kind: 'token', name: entry.name, token: entry.secret, hosts: entry.hosts } : (await this.#fromFile()).credentials.get(name);
  }

  /**
   * An App credential from `FORGESYNC_CREDENTIAL_<NAME>_APP_ID`,
   * `_INSTALLATION_ID`, `_PRIVATE_KEY_FILE` (a path: the key itself is never
   * in the environment, where child processes and crash reports see it) and
   * `_HOSTS`; undefined when `_APP_ID` is not set or something is wrong (logged).
   */
  async #appFromEnv(name: string): Promise<AppCredential | undefined> {
    const env = this.options.env ?? process.env;
    const variable = `${KINDS.credential.envPrefix}${name.toUpperCase()}`;
    const appId = env[`${variable}_APP_ID`];
    if (!appId) return undefined;
    try {
      const keyFile = env[`${variable}_PRIVATE_KEY_FILE`];
      if (!keyFile) throw new Error(`GitHub App credential "${name}" needs ${variable}_PRIVATE_KEY_FILE, the path of the App's private key (PEM)`);
      let privateKey: string;
      try {
        privateKey = await readRegularFile(keyFile);
      } catch (error) {
        throw new Error(`GitHub App credential "${name}": its private key file ${(error as Error).message}`);
      }
      const hosts = (env[`${variable}_HOSTS`] ?? '').split(',').filter((host) => host.trim() !== '');
      const apiUrl = env[`${variable}_API_URL`];
      return parseAppEntry(name, { appId, installationId: env[`${variable}_INSTALLATION_ID`], privateKey, hosts, ...(apiUrl ? { apiUrl } : {}) });
    } catch (error) {
      this.#report(`${variable}_APP_ID`, (error as Error).message);
      return undefined;
    }
  }

  #fromEnv(kind: Kind, name: string): BoundSecret | undefined {
    const env = this.options.env ?? process.env;
    const variable = `${kind.envPrefix}${name.toUpperCase()}`;
    const secret = env[variable];
    if (!secret) return undefined;
    try {
      return parseEntry(kind, name, { [kind.field]: secret, hosts: (env[`${variable}_HOSTS`] ?? '').split(',').filter((host) => host.trim() !== '') });
    } catch (error) {
      this.#report(variable, (error as Error).message);
      return undefined;
    }
  }

  async #fromFile(): Promise<SecretsFile> {
    const path = this.options.secretsFile;
    if (!path) return emptySecrets();
    try {
      const info = await stat(path);
      const key = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}`;
      if (this.#file?.key === key) return this.#file.secrets;
      const secrets = parseSecretsFile(await readRegularFile(path));
      this.#file = { key, secrets };
      this.#reported = undefined;
      return secrets;
    } catch (error) {
      this.#report(path, (error as Error).message);
      return emptySecrets();
    }
  }

  /** Logs what is wrong with a source of credentials once per distinct problem (never a secret). */
  #report(where: string, problem: string): void {
    const text = `${where}: ${problem}`;
    if (this.#reported === text) return;
    this.#reported = text;
    this.options.logger.warn({ event: 'credentials_unusable', where, problem }, `credentials in ${where} cannot be used: ${problem}`);
  }
}

/** The URL a credential is checked against: scp-like `user@host:path`, `git+ssh://` and `ssh+git://` as ssh. */
function toUrl(url: string): URL {
  if (/^(git\+ssh|ssh\+git):\/\//i.test(url)) return new URL(`ssh${url.slice(url.indexOf(':'))}`);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return new URL(url);
  const scp = /^(?:[^@/]*@)?(\[[^\]]+\]|[^:/]+):/.exec(url);
  if (scp) return new URL(`ssh://${scp[1]}/`);
  throw new Error('not a URL');
}

/** Parses the secrets file; the messages describe the shape, never the content (JSON.parse's would quote it). */
function parseSecretsFile(text: string): SecretsFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('must hold a JSON object of credentials by name');
  const secrets = emptySecrets();
  let index = 0;
  for (const [key, entry] of Object.entries(value)) {
    index++;
    if (key === READERS_KEY) {
      secrets.readers = parseReaders(entry);
      continue;
    }
    const kind = key.startsWith(KINDS.feedSecret.keyPrefix) ? KINDS.feedSecret : KINDS.credential;
    const name = key.slice(kind.keyPrefix.length);
    if (!NAME.test(name)) throw new Error(`has a ${kind.label} name that is not 1-64 letters, digits and "_" (entry ${index})`);
    const lower = name.toLowerCase();
    if (kind === KINDS.feedSecret) {
      if (secrets.feedSecrets.has(lower)) throw new Error(`defines feed secret "${name}" twice (names compare case-insensitively)`);
      secrets.feedSecrets.set(lower, parseEntry(kind, lower, entry));
    } else {
      if (secrets.credentials.has(lower)) throw new Error(`defines credential "${name}" twice (names compare case-insensitively)`);
      secrets.credentials.set(lower, isAppEntry(entry) ? parseAppEntry(lower, entry as Record<string, unknown>) : tokenCredentialOf(parseEntry(kind, lower, entry)));
    }
  }
  return secrets;
}

function tokenCredentialOf(entry: BoundSecret): TokenCredential {
  return { kind: 'token', name: entry.name, token: entry.secret, hosts: entry.hosts };
}

/** A GitHub App credential's `{ appId, privateKey, installationId, hosts }` (see credentials/app.ts). */
function parseAppEntry(name: string, entry: Record<string, unknown>): AppCredential {
  const { appId, privateKey, installationId, hosts, apiUrl, ...rest } = entry;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new Error(`GitHub App credential "${name}" has a field it does not know (${JSON.stringify(unknown.slice(0, 40))}): it takes appId, privateKey, installationId, hosts and apiUrl`);
  const app = parseAppIdentity(name, { appId, privateKey, installationId });
  return { kind: 'app', name, app, apiUrl: apiUrl === undefined ? null : parseApiUrl(name, apiUrl), hosts: parseHosts(KINDS.credential, name, hosts) };
}

/** A credential's `{ token, hosts }` or a feed secret's `{ secret, hosts }`. */
function parseEntry(kind: Kind, name: string, entry: unknown): BoundSecret {
  const { label, field } = kind;
  const record = entry as Record<string, unknown> | null;
  if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new Error(`${label} "${name}" must be { "${field}": …, "hosts": […] }`);
  const { [field]: secret, hosts } = record;
  if (typeof secret !== 'string' || secret.length < 4 || BAD_TOKEN.test(secret)) {
    throw new Error(`${label} "${name}" needs a ${field} of at least 4 characters without whitespace or control characters`);
  }
  return { name, secret, hosts: parseHosts(kind, name, hosts) };
}

/** The host bindings of an entry (at least one). */
function parseHosts(kind: Kind, name: string, hosts: unknown): HostBinding[] {
  const { label } = kind;
  if (!Array.isArray(hosts) || hosts.length === 0) throw new Error(`${label} "${name}" needs the list of hosts it may be ${kind === KINDS.credential ? 'sent to' : 'used with'}`);
  return hosts.map((host, index) => {
    try {
      return parseHostBinding(String(host));
    } catch {
      throw new Error(`${label} "${name}": host ${index + 1} is not ${BINDING_FORMS}`);
    }
  });
}
