import { readFileSync } from 'node:fs';
import { InvalidInputError } from '../errors.js';

/** A credential reference could not be resolved to a secret. */
export class CredentialError extends InvalidInputError {}

const REFERENCE = /^(env:[A-Za-z_][A-Za-z0-9_]*|file:\/.+|[A-Za-z0-9_.-]{1,100})$/;

/** Checks the shape of a credential reference (never a secret itself). */
export function validateCredentialRef(ref: string): string {
  if (!REFERENCE.test(ref)) {
    throw new CredentialError(
      `credential reference "${ref.slice(0, 40)}" is not valid; use env:VARIABLE, file:/absolute/path or a name from the secrets file`,
    );
  }
  return ref;
}

/**
 * Turns a credential reference into the secret at the moment it is needed,
 * so the database only ever holds the reference:
 * `env:NAME` (environment), `file:/path` (file contents, trimmed) or a bare
 * name looked up in the JSON secrets file (FORGESYNC_SECRETS_FILE).
 */
export class CredentialResolver {
  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly secretsFile: string | undefined = env.FORGESYNC_SECRETS_FILE,
  ) {}

  resolve(ref: string | null | undefined): string | undefined {
    if (!ref) return undefined;
    if (ref.startsWith('env:')) {
      const value = this.env[ref.slice(4)];
      if (!value) throw new CredentialError(`credential ${ref}: environment variable ${ref.slice(4)} is not set`);
      return value;
    }
    if (ref.startsWith('file:')) return this.#readFile(ref.slice(5), ref);
    if (!this.secretsFile) {
      throw new CredentialError(`credential "${ref}": no secrets file configured (set FORGESYNC_SECRETS_FILE)`);
    }
    const secrets = JSON.parse(this.#readFile(this.secretsFile, ref)) as Record<string, unknown>;
    const value = secrets[ref];
    if (typeof value !== 'string' || value === '') {
      throw new CredentialError(`credential "${ref}" is not in the secrets file ${this.secretsFile}`);
    }
    return value;
  }

  #readFile(path: string, ref: string): string {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch (error) {
      throw new CredentialError(`credential "${ref}": cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
  }
}
