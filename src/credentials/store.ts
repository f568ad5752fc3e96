import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Logger } from '../logging/logger.js';
import { CredentialUnavailableError, InvalidCredentialRefError } from './errors.js';
import { boundTo, hostOf, parseHostBinding, type HostBinding } from './hosts.js';

/** A credential the operator defined: the secret and the hosts it may be sent to. */
export interface Credential {
  name: string;
  token: string;
  hosts: readonly HostBinding[];
}

/** A token resolved for one URL, and the test for any other URL it might be sent to (a redirect). */
export interface BoundToken {
  token: string;
  /** Whether the credential is bound to the host `url` points at. */
  allows(url: URL): boolean;
}

/** Credential names: also the suffix of their environment variables, so letters, digits and "_". */
const NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** Largest secrets file read; a bigger one (or a device, a FIFO, a directory) is refused. */
const MAX_SECRETS_FILE_BYTES = 1024 * 1024;
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
 * (`FORGESYNC_CREDENTIAL_<NAME>=<token>` with `FORGESYNC_CREDENTIAL_<NAME>_HOSTS=host[:port],…`);
 * names compare case-insensitively, and the environment wins. A token is handed
 * out only for a URL whose host it is bound to.
 *
 * The secrets file is read only as a regular file of at most 1 MiB, without
 * blocking the event loop, and again only when it changed. What is wrong with
 * it is logged (never its content); callers only ever see
 * CredentialUnavailableError, the same for every failure.
 */
export class CredentialStore {
  #file: { key: string; credentials: Map<string, Credential> } | undefined;
  #reported: string | undefined;

  constructor(
    private readonly options: { secretsFile: string | undefined; logger: Logger; env?: NodeJS.ProcessEnv },
  ) {}

  /**
   * The token of credential `name` for `url`, with the hosts it is bound to.
   * @throws InvalidCredentialRefError for a malformed name; CredentialUnavailableError for anything else.
   */
  async tokenFor(name: string, url: string): Promise<BoundToken> {
    validateCredentialName(name);
    const credential = (await this.#lookup(name.toLowerCase())) ?? null;
    let target: URL | undefined;
    try {
      target = toUrl(url);
    } catch {
      target = undefined;
    }
    if (!credential || !target || !boundTo(credential.hosts, target)) throw new CredentialUnavailableError(name, hostOf(url));
    const hosts = credential.hosts;
    return { token: credential.token, allows: (other) => boundTo(hosts, other) };
  }

  async #lookup(name: string): Promise<Credential | undefined> {
    return this.#fromEnv(name) ?? (await this.#fromFile()).get(name);
  }

  #fromEnv(name: string): Credential | undefined {
    const env = this.options.env ?? process.env;
    const variable = `FORGESYNC_CREDENTIAL_${name.toUpperCase()}`;
    const token = env[variable];
    if (!token) return undefined;
    try {
      return parseCredential(name, { token, hosts: (env[`${variable}_HOSTS`] ?? '').split(',').filter((host) => host.trim() !== '') });
    } catch (error) {
      this.#report(variable, (error as Error).message);
      return undefined;
    }
  }

  async #fromFile(): Promise<Map<string, Credential>> {
    const path = this.options.secretsFile;
    if (!path) return new Map();
    try {
      const info = await stat(path);
      const key = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}`;
      if (this.#file?.key === key) return this.#file.credentials;
      const credentials = parseSecretsFile(await readRegularFile(path));
      this.#file = { key, credentials };
      this.#reported = undefined;
      return credentials;
    } catch (error) {
      this.#report(path, (error as Error).message);
      return new Map();
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

/** The URL a credential is checked against: scp-like `user@host:path` as ssh. */
function toUrl(url: string): URL {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return new URL(url);
  const scp = /^(?:[^@/]*@)?(\[[^\]]+\]|[^:/]+):/.exec(url);
  if (scp) return new URL(`ssh://${scp[1]}/`);
  throw new Error('not a URL');
}

/** Reads a regular file of at most MAX_SECRETS_FILE_BYTES; anything else is refused before it is read. */
async function readRegularFile(path: string): Promise<string> {
  // O_NONBLOCK: opening a FIFO does not wait for a writer (and fstat then refuses it).
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch((error: NodeJS.ErrnoException) => {
    throw new Error(`cannot be opened (${error.code ?? 'error'})`);
  });
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error('is not a regular file');
    if (info.size > MAX_SECRETS_FILE_BYTES) throw new Error(`is larger than ${MAX_SECRETS_FILE_BYTES} bytes`);
    const buffer = Buffer.alloc(MAX_SECRETS_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_SECRETS_FILE_BYTES) throw new Error(`is larger than ${MAX_SECRETS_FILE_BYTES} bytes`);
    }
    return buffer.toString('utf8', 0, length);
  } finally {
    await handle.close();
  }
}

/** Parses the secrets file; the messages describe the shape, never the content (JSON.parse's would quote it). */
function parseSecretsFile(text: string): Map<string, Credential> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('must hold a JSON object of credentials by name');
  const credentials = new Map<string, Credential>();
  for (const [name, entry] of Object.entries(value)) {
    if (!NAME.test(name)) throw new Error(`has a credential name that is not 1-64 letters, digits and "_" (entry ${credentials.size + 1})`);
    const key = name.toLowerCase();
    if (credentials.has(key)) throw new Error(`defines credential "${name}" twice (names compare case-insensitively)`);
    credentials.set(key, parseCredential(key, entry));
  }
  return credentials;
}

function parseCredential(name: string, entry: unknown): Credential {
  const record = entry as { token?: unknown; hosts?: unknown } | null;
  if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new Error(`credential "${name}" must be { "token": …, "hosts": […] }`);
  const { token, hosts } = record;
  if (typeof token !== 'string' || token.length < 4 || BAD_TOKEN.test(token)) {
    throw new Error(`credential "${name}" needs a token of at least 4 characters without whitespace or control characters`);
  }
  if (!Array.isArray(hosts) || hosts.length === 0) throw new Error(`credential "${name}" needs the list of hosts it may be sent to`);
  const bindings = hosts.map((host, index) => {
    try {
      return parseHostBinding(String(host));
    } catch {
      throw new Error(`credential "${name}": host ${index + 1} is not host or host:port`);
    }
  });
  return { name, token, hosts: bindings };
}
