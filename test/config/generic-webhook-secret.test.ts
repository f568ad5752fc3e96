import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { ConfigError } from '../../src/config/errors.js';
import { decodeWebhookSecret, InvalidWebhookSecretError } from '../../src/replication/webhooks/standard.js';

const ENV = 'FORGESYNC_GENERIC_WEBHOOK_SECRET';
const load = (value: string) => loadConfig({ cwd: '/srv/app', env: { [ENV]: value } }).genericWebhookSecret;

/** The problem loadConfig reports for `value`; it must never repeat the value. */
function problemOf(value: string): string {
  try {
    load(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(1);
    if (value.length > 8) expect(problems[0]).not.toContain(value.slice(6));
    return problems[0]!;
  }
  throw new Error(`${ENV}=${value} was accepted`);
}

describe('FORGESYNC_GENERIC_WEBHOOK_SECRET (Standard Webhooks whsec_<base64>)', () => {
  it('accepts whsec_ + base64 of 24 to 64 bytes, padded or not, and decodes the key the standardwebhooks signer uses', () => {
    for (const bytes of [24, 32, 64]) {
      const key = randomBytes(bytes);
      const secret = `whsec_${key.toString('base64')}`;
      expect(load(secret)).toBe(secret);
      expect(load(`  ${secret}\n`)).toBe(secret);
      expect(load(secret.replace(/=+$/, ''))).toBe(secret.replace(/=+$/, ''));
      expect(decodeWebhookSecret(secret).equals(key)).toBe(true);
      // The same key as the spec's library derives: its signature is the HMAC under our key.
      const at = new Date(1_700_000_000_000);
      const signed = new Webhook(secret).sign('msg_1', at, '{}');
      expect(signed).toBe(`v1,${createHmac('sha256', key).update('msg_1.1700000000.{}').digest('base64')}`);
    }
  });

  it.each([
    ['a plain secret (the old scheme)', randomBytes(18).toString('hex'), /genericWebhookSecret \(FORGESYNC_GENERIC_WEBHOOK_SECRET\): must be a Standard Webhooks secret: "whsec_" followed by base64 \(e\.g\. whsec_\$\(openssl rand -base64 32\)\)/],
    ['base64 without the prefix', randomBytes(32).toString('base64'), /must be a Standard Webhooks secret/],
    ['characters outside base64', `whsec_${randomBytes(30).toString('base64url').replace(/^./, '-')}`, /the part after "whsec_" must be standard base64/],
    ['a typo Node would skip', `whsec_${randomBytes(32).toString('base64').replace(/^(.{10})/, '$1!')}`, /must be standard base64/],
    ['too much padding', `whsec_${randomBytes(32).toString('base64')}==`, /must be standard base64/],
    ['a key of 16 bytes', `whsec_${randomBytes(16).toString('base64')}`, /decodes to 16 bytes; a Standard Webhooks key has 24 to 64 random bytes/],
    ['a key of 65 bytes', `whsec_${randomBytes(65).toString('base64')}`, /decodes to 65 bytes/],
    ['whsec_ alone', 'whsec_', /must be standard base64/],
  ])('refuses %s, saying why without repeating it', (_label, value, message) => {
    expect(problemOf(value)).toMatch(message);
  });

  it('decodeWebhookSecret throws a typed error (InvalidInputError), and a blank value is refused', () => {
    expect(() => decodeWebhookSecret('nope')).toThrow(InvalidWebhookSecretError);
    expect(() => loadConfig({ cwd: '/srv/app', env: { [ENV]: '   ' } })).toThrow(/genericWebhookSecret .*must not be empty/);
  });

  it('is unset by default: the generic receiver is off', () => {
    expect(loadConfig({ cwd: '/srv/app', env: {} }).genericWebhookSecret).toBeUndefined();
  });
});
