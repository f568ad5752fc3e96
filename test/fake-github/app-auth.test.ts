import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FakeAppInstallations } from './app-auth.js';

/* The fake's access-token endpoint checks an App's JWT as GitHub does: RS256 by the App's key, iss, iat, exp. */

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
const NOW_S = 1_750_000_000;

function jwt(claims: Record<string, unknown>, key = keys.privateKey, alg = 'RS256'): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signed = `${part({ alg, typ: 'JWT' })}.${part(claims)}`;
  return `${signed}.${sign('RSA-SHA256', Buffer.from(signed), key).toString('base64url')}`;
}

describe('the fake GitHub App access-token endpoint', () => {
  const app = new FakeAppInstallations({ appId: 12, publicKey: keys.publicKey, installationId: 34, tokenLifetimeMs: 60_000 });
  const mint = (authorization: string | undefined, installation = '34') => {
    const accepted: string[] = [];
    const answer = app.mint(installation, authorization, (token) => accepted.push(token), NOW_S * 1000);
    return { ...answer, accepted };
  };
  const valid = { iss: 12, iat: NOW_S - 30, exp: NOW_S + 540 };

  it('mints a token for a valid JWT (201, GitHub\'s shape) and hands it to the server; it expires when said', () => {
    const answer = mint(`Bearer ${jwt(valid)}`);
    expect(answer.status).toBe(201);
    const body = answer.body as { token: string; expires_at: string; permissions: object; repository_selection: string };
    expect(body.token).toMatch(/^ghs_/);
    expect(body.expires_at).toBe(new Date((NOW_S + 60) * 1000).toISOString().replace('.000Z', 'Z'));
    expect(body.repository_selection).toBe('all');
    expect(answer.accepted).toEqual([body.token]);
    expect(app.expired(body.token, NOW_S * 1000 + 59_000)).toBe(false);
    expect(app.expired(body.token, NOW_S * 1000 + 60_000)).toBe(true);
  });

  it('refuses with 401 and GitHub\'s message: wrong key, wrong issuer, expired, too long, from the future, not a JWT; 404 for another installation', () => {
    const refusals: [string | undefined, RegExp][] = [
      [`Bearer ${jwt(valid, stranger.privateKey)}`, /could not be decoded/],
      [`Bearer ${jwt({ ...valid, iss: 13 })}`, /'Issuer' claim/],
      [`Bearer ${jwt({ ...valid, exp: NOW_S - 1 })}`, /'Expiration time' claim \('exp'\) must be a numeric value/],
      [`Bearer ${jwt({ ...valid, exp: NOW_S + 3600 })}`, /too far in the future/],
      [`Bearer ${jwt({ ...valid, iat: NOW_S + 3600 })}`, /'Issued at' claim/],
      [`Bearer ${jwt(valid, keys.privateKey, 'HS256')}`, /could not be decoded/],
      ['Bearer not-a-jwt', /could not be decoded/],
      [undefined, /could not be decoded/],
    ];
    for (const [authorization, message] of refusals) {
      const answer = mint(authorization);
      expect(answer.status).toBe(401);
      expect((answer.body as { message: string }).message).toMatch(message);
      expect(answer.accepted).toEqual([]);
    }
    expect(mint(`Bearer ${jwt(valid)}`, '35').status).toBe(404);
  });
});
