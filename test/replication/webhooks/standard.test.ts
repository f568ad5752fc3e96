import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { decodeWebhookSecret, readStandardHeaders, verifyStandardSignature } from '../../../src/replication/webhooks/standard.js';
import { deliveryId, standardSecret } from './fixtures.js';

const SECRET = standardSecret();
const KEY = decodeWebhookSecret(SECRET);
const MINUTE = 60_000;

/** forgesync's verdict on a delivery: the header check, then the signature. */
function ours(body: Buffer | string, headers: Record<string, string>, nowMs = Date.now()): boolean {
  const read = readStandardHeaders(headers, nowMs);
  return read.ok && verifyStandardSignature(KEY, read.headers, Buffer.from(body));
}

/** The standardwebhooks library's verdict on the same delivery. */
function theirs(body: Buffer | string, headers: Record<string, string>): boolean {
  try {
    new Webhook(SECRET).verify(body, headers, { jsonParse: false });
    return true;
  } catch {
    return false;
  }
}

function signed(body: string, options: { at?: Date; id?: string; secret?: string } = {}) {
  const id = options.id ?? deliveryId();
  const at = options.at ?? new Date();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(options.secret ?? SECRET).sign(id, at, body),
  };
}

describe('Standard Webhooks verification agrees with the standardwebhooks library', () => {
  const body = '{"type":"push","data":{"ref":"refs/heads/main"}}';
  const now = Date.now();
  const cases: [string, string, Record<string, string>, boolean][] = [
    ['a signed delivery', body, signed(body), true],
    ['a changed body', `${body} `, signed(body), false],
    ['4 minutes old', body, signed(body, { at: new Date(now - 4 * MINUTE) }), true],
    ['6 minutes old', body, signed(body, { at: new Date(now - 6 * MINUTE) }), false],
    ['6 minutes ahead', body, signed(body, { at: new Date(now + 6 * MINUTE) }), false],
    ['another key', body, signed(body, { secret: standardSecret() }), false],
    ['a changed id', body, { ...signed(body), 'webhook-id': deliveryId() }, false],
    ['no webhook-signature', body, (({ 'webhook-signature': _, ...rest }) => rest)(signed(body)), false],
    ['an unpadded secret signs the same', body, signed(body, { secret: SECRET.replace(/=+$/, '') }), true],
    [
      'several signatures, the valid one last',
      body,
      (() => {
        const headers = signed(body);
        const other = new Webhook(standardSecret()).sign(headers['webhook-id'], new Date(Number(headers['webhook-timestamp']) * 1000), body);
        return { ...headers, 'webhook-signature': `${other} v1a,AAAA ${headers['webhook-signature']}` };
      })(),
      true,
    ],
    ['only an asymmetric (v1a) signature', body, { ...signed(body), 'webhook-signature': 'v1a,AAAA' }, false],
  ];

  it.each(cases)('%s', (_label, sent, headers, valid) => {
    expect(theirs(sent, headers)).toBe(valid);
    expect(ours(sent, headers, now)).toBe(valid);
  });
});

describe('where the library is lax, forgesync is strict', () => {
  it('signs the raw bytes: a body that is not UTF-8 cannot be swapped for another that decodes alike', () => {
    const id = deliveryId();
    const at = new Date();
    const original = Buffer.from([0xff, 0x7b, 0x7d]);
    const forged = Buffer.from([0xfe, 0x7b, 0x7d]); // both decode to "\ufffd{}"
    const headers = { ...signed('', { id, at }), 'webhook-signature': new Webhook(SECRET).sign(id, at, original) };
    expect(theirs(forged, headers)).toBe(true);
    expect(ours(forged, headers)).toBe(false);
    // A sender signing the raw bytes, as the spec says, is accepted.
    const raw = createHmac('sha256', KEY).update(`${id}.${headers['webhook-timestamp']}.`).update(original).digest('base64');
    expect(ours(original, { ...headers, 'webhook-signature': `v1,${raw}` })).toBe(true);
  });

  it('reads webhook-timestamp as digits only, and refuses ids holding "." (the separator of the signed text)', () => {
    const headers = signed('{}');
    expect(theirs('{}', { ...headers, 'webhook-timestamp': `${headers['webhook-timestamp']}abc` })).toBe(true);
    expect(ours('{}', { ...headers, 'webhook-timestamp': `${headers['webhook-timestamp']}abc` })).toBe(false);
    const dotted = signed('{}', { id: 'msg.1' });
    expect(theirs('{}', dotted)).toBe(true);
    expect(readStandardHeaders(dotted)).toEqual({ ok: false, reason: 'invalid signature headers' });
  });
});
