import { createHash, createPrivateKey } from 'node:crypto';

/**
 * A GitHub App installation the operator defined as a credential: the App's
 * id, its private key (PEM, normalised to PKCS#8) and the installation whose
 * tokens forgesync mints. The key never leaves this object except to sign the
 * App's JWT (credentials/installation-tokens.ts).
 */
export interface AppIdentity {
  appId: string;
  installationId: string;
  /** PKCS#8 PEM of the App's RSA private key. */
  privateKey: string;
  /** SHA-256 of the key (hex): tells a replaced key from the one in use, without keeping a second copy of it. */
  keyFingerprint: string;
}

/** The fields of an App credential in the secrets file (`hosts` is parsed by the store like every credential's). */
export const APP_FIELDS = ['appId', 'privateKey', 'installationId'] as const;

const NUMERIC_ID = /^[1-9][0-9]{0,19}$/;

/** Whether a secrets-file entry describes an App (it names `appId`) rather than a token. */
export function isAppEntry(entry: unknown): boolean {
  return entry !== null && typeof entry === 'object' && !Array.isArray(entry) && 'appId' in entry;
}

/**
 * Checks an App credential's fields: `appId` and `installationId` are
 * GitHub's numeric ids (number or digits), `privateKey` a PEM-encoded RSA
 * private key (GitHub's Apps sign RS256). Messages name the credential and
 * the field, never a value: a key pasted in the wrong field stays out of logs.
 * @throws Error with such a message.
 */
export function parseAppIdentity(name: string, fields: { appId: unknown; privateKey: unknown; installationId: unknown }): AppIdentity {
  const appId = numericId(name, 'appId', fields.appId);
  const installationId = numericId(name, 'installationId', fields.installationId);
  return { appId, installationId, ...parsePrivateKey(name, fields.privateKey) };
}

function numericId(name: string, field: string, value: unknown): string {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !NUMERIC_ID.test(text)) throw new Error(`GitHub App credential "${name}" needs ${field} as GitHub shows it (a positive number)`);
  return text;
}

/**
 * The key as PKCS#8 PEM, and its fingerprint. Keys kept in environment
 * variables often have their line breaks written as `\n`: those are restored.
 */
function parsePrivateKey(name: string, value: unknown): Pick<AppIdentity, 'privateKey' | 'keyFingerprint'> {
  const what = `GitHub App credential "${name}" needs privateKey as the PEM-encoded RSA private key GitHub generated for the App ("-----BEGIN RSA PRIVATE KEY-----" or "-----BEGIN PRIVATE KEY-----")`;
  if (typeof value !== 'string' || !value.includes('-----BEGIN')) throw new Error(`${what}: it is not PEM`);
  let key;
  try {
    key = createPrivateKey({ key: value.replace(/\\n/g, '\n'), format: 'pem' });
  } catch {
    // OpenSSL's reason is left out: it says nothing the operator can act on, and must not echo the key.
    throw new Error(`${what}: it cannot be decoded as a private key`);
  }
  if (key.asymmetricKeyType !== 'rsa') throw new Error(`${what}: it is a ${key.asymmetricKeyType ?? 'non-RSA'} key, not RSA`);
  const privateKey = key.export({ type: 'pkcs8', format: 'pem' }).toString();
  return { privateKey, keyFingerprint: createHash('sha256').update(privateKey).digest('hex') };
}

/** An App credential's `apiUrl`: http(s), no user, query or fragment; without its trailing slash. */
export function parseApiUrl(name: string, value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash) {
    throw new Error(`GitHub App credential "${name}": apiUrl must be the API's http(s) URL (https://api.github.com or https://<host>/api/v3)`);
  }
  return url.toString().replace(/\/+$/, '');
}

/**
 * Where an App credential's tokens are minted for a URL of a GitHub host:
 * github.com (and api.github.com) at https://api.github.com, any other
 * host at its GitHub Enterprise API `<origin>/api/v3` (a git or ssh URL of
 * the host included: the token then goes over https).
 */
export function appApiUrlFor(target: URL): string {
  const hostname = target.hostname.toLowerCase();
  if (hostname === 'github.com' || hostname === 'api.github.com') return 'https://api.github.com';
  const scheme = target.protocol === 'http:' ? 'http:' : 'https:';
  const port = target.protocol === 'http:' || target.protocol === 'https:' ? target.port : '';
  return `${scheme}//${target.hostname}${port ? `:${port}` : ''}/api/v3`;
}
