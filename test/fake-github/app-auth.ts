import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';

/** A GitHub App the fake knows: its id, public key, and the installation it may mint tokens for. */
export interface FakeAppOptions {
  appId: number;
  /** The App's public key (PEM or KeyObject): JWTs must be signed by its private key (RS256). */
  publicKey: string | KeyObject;
  installationId: number;
  /** Lifetime of minted installation tokens (default 3 600 000 ms, as GitHub's); shorter lets a test see a refresh. */
  tokenLifetimeMs?: number;
}

/** A JWT the fake accepted, by its claims. */
export interface SeenJwt {
  iss: string;
  iat: number;
  exp: number;
}

/** What the access-token endpoint answers: GitHub's status and body. */
export interface MintAnswer {
  status: number;
  body: unknown;
}

const DOC_401 = 'https://docs.github.com/rest';
const DOC_MINT = 'https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app';
/** GitHub accepts an `exp` at most 10 minutes after now (and allows a little clock drift on `iat`). */
const MAX_JWT_LIFETIME_S = 600;
const IAT_DRIFT_S = 60;

/**
 * The App side of the fake GitHub: `POST /app/installations/{id}/access_tokens`
 * verified as GitHub does (a JWT in `Authorization: Bearer`, RS256, signed by
 * the App's key, `iss` the App's id, `iat` not in the future, `exp` in the
 * future and at most 10 minutes away), minting `ghs_` tokens with an expiry.
 * The server accepts a minted token like its other tokens until it expires
 * (then 401 "Bad credentials", as GitHub answers an expired one).
 */
export class FakeAppInstallations {
  readonly jwts: SeenJwt[] = [];
  /** Every token minted, in order, with its expiry (epoch ms). */
  readonly minted: { token: string; expiresAt: number }[] = [];
  /** Refusals, by GitHub's message. */
  readonly refused: string[] = [];
  readonly #publicKey: KeyObject;

  constructor(readonly options: FakeAppOptions) {
    this.#publicKey = typeof options.publicKey === 'string' ? createPublicKey(options.publicKey) : options.publicKey;
  }

  /** Whether `token` was minted here and has expired (the server then refuses it). */
  expired(token: string, now = Date.now()): boolean {
    const minted = this.minted.find((entry) => entry.token === token);
    return minted !== undefined && now >= minted.expiresAt;
  }

  /** Answers `POST /app/installations/{installationId}/access_tokens` with `authorization`; a new token is passed to `accept`. */
  mint(installationId: string, authorization: string | undefined, accept: (token: string) => void, now = Date.now()): MintAnswer {
    const problem = this.#jwtProblem(authorization, Math.floor(now / 1000));
    if (problem !== undefined) {
      this.refused.push(problem);
      return { status: 401, body: { message: problem, documentation_url: DOC_401, status: '401' } };
    }
    if (installationId !== String(this.options.installationId)) return { status: 404, body: { message: 'Not Found', documentation_url: DOC_MINT, status: '404' } };
    const token = `ghs_${randomBytes(18).toString('base64url')}`;
    const expiresAt = now + (this.options.tokenLifetimeMs ?? 3_600_000);
    this.minted.push({ token, expiresAt });
    accept(token);
    return {
      status: 201,
      body: {
        token,
        // GitHub writes whole seconds, UTC ("2016-07-11T22:14:10Z").
        expires_at: new Date(Math.floor(expiresAt / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { contents: 'read', issues: 'read', metadata: 'read', pull_requests: 'read' },
        repository_selection: 'all',
      },
    };
  }

  /** What GitHub would say of this Authorization header, or undefined for a valid JWT of the App (recorded). */
  #jwtProblem(authorization: string | undefined, nowS: number): string | undefined {
    const match = /^bearer\s+(\S+)$/i.exec(authorization ?? '');
    if (!match) return 'A JSON web token could not be decoded';
    const parts = match[1]!.split('.');
    if (parts.length !== 3) return 'A JSON web token could not be decoded';
    const [headerPart, claimsPart, signaturePart] = parts as [string, string, string];
    let header: { alg?: unknown };
    let claims: { iss?: unknown; iat?: unknown; exp?: unknown };
    try {
      header = JSON.parse(Buffer.from(headerPart, 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(claimsPart, 'base64url').toString('utf8'));
    } catch {
      return 'A JSON web token could not be decoded';
    }
    if (header.alg !== 'RS256') return 'A JSON web token could not be decoded';
    const signed = verify('RSA-SHA256', Buffer.from(`${headerPart}.${claimsPart}`), this.#publicKey, Buffer.from(signaturePart, 'base64url'));
    if (!signed) return 'A JSON web token could not be decoded';
    if (String(claims.iss) !== String(this.options.appId)) return "'Issuer' claim ('iss') must be an Integer";
    if (typeof claims.iat !== 'number' || !Number.isInteger(claims.iat) || claims.iat > nowS + IAT_DRIFT_S) {
      return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued.";
    }
    if (typeof claims.exp !== 'number' || !Number.isInteger(claims.exp) || claims.exp <= nowS) {
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires.";
    }
    if (claims.exp > nowS + MAX_JWT_LIFETIME_S) return "'Expiration time' claim ('exp') is too far in the future.";
    this.jwts.push({ iss: String(claims.iss), iat: claims.iat, exp: claims.exp });
    return undefined;
  }
}
