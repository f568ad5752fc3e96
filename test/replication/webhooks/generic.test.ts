import { testSecret } from '../../support/secrets.js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signBody } from '../../../src/replication/webhooks/signature.js';
import { buildServer, type ForgesyncServer } from '../../../src/server/app.js';
import { createTestDatabase, openTestForgesync, testConfig } from '../../support/harness.js';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import { deliveryId, genericDelivery, requestCounts, SECRETS, standardSecret, WEBHOOK_ENV, webhookCount } from './fixtures.js';

const MINUTE = 60_000;
const ACCEPTED = '{"result":"accepted"}';

/** What a sender can see of an answer: status, the headers that describe the body, and the body's bytes. */
function visible(response: LightMyRequestResponse) {
  return {
    status: response.statusCode,
    type: response.headers['content-type'],
    length: response.headers['content-length'],
    body: response.body,
  };
}

/** The generic webhook log lines of deliveries with `id`. */
function logLinesOf(t: TestServer, id: string) {
  return t.logs.lines.filter((line) => line.event === 'webhook' && line.provider === 'generic' && line.delivery === id);
}

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: WEBHOOK_ENV, listen: true });
  await t.app.replication.addSource({ url: 'git@gitlab.example.com:ops/infra.git', name: 'infra' });
  await t.app.replication.addSource({ url: 'https://git.example.com/ops/other.git', name: 'other' });
  await t.app.replication.addSource({ url: 'https://git.example.com/ops/dormant.git', name: 'dormant' });
  await t.app.replication.updateSource('dormant', { enabled: false });
});
afterAll(async () => t?.close());

describe('generic webhook (Standard Webhooks)', () => {
  it('a delivery signed by the standardwebhooks signer → 202 {"result":"accepted"}, one sync request; the same webhook-id again → the same answer, nothing more', async () => {
    const before = await requestCounts(t);
    const duplicatesBefore = await webhookCount(t, 'generic', 'duplicate');
    const delivery = genericDelivery('infra');
    const first = await t.server.inject(delivery);
    expect(first.statusCode).toBe(202);
    expect(first.body).toBe(ACCEPTED);
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });

    for (let i = 0; i < 3; i++) {
      const again = await t.server.inject(delivery);
      expect(visible(again)).toEqual(visible(first));
    }
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
    expect(await webhookCount(t, 'generic', 'duplicate')).toBe(duplicatesBefore + 3);
    const id = delivery.headers['webhook-id']!;
    expect(logLinesOf(t, id).map((line) => line.result)).toEqual(['accepted', 'duplicate', 'duplicate', 'duplicate']);
  });

  it('an empty body without a content type is signed and accepted like any other', async () => {
    const before = await requestCounts(t);
    const response = await t.server.inject(genericDelivery('infra', { body: '', contentType: null }));
    expect(visible(response)).toMatchObject({ status: 202, body: ACCEPTED });
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
  });

  it('a replay of a valid delivery to another source name is a duplicate: same answer, nothing recorded for that name', async () => {
    const delivery = genericDelivery('infra');
    const first = await t.server.inject(delivery);
    const before = await requestCounts(t);
    const replayed = await t.server.inject({ ...delivery, url: '/hooks/generic/other' });
    expect(visible(replayed)).toEqual(visible(first));
    expect(await requestCounts(t)).toEqual(before);
    expect(logLinesOf(t, delivery.headers['webhook-id']!).map((line) => line.result)).toEqual(['accepted', 'duplicate']);
  });

  it('known, unknown and disabled names get byte-identical answers; only the log and metrics tell them apart', async () => {
    const before = await requestCounts(t);
    const counts = { accepted: await webhookCount(t, 'generic', 'accepted'), unknown: await webhookCount(t, 'generic', 'unknown_repository'), ignored: await webhookCount(t, 'generic', 'ignored') };
    const known = genericDelivery('infra');
    const unknown = genericDelivery('no-such-source');
    const disabled = genericDelivery('dormant');
    const answers = [await t.server.inject(known), await t.server.inject(unknown), await t.server.inject(disabled)];
    expect(answers.map(visible)).toEqual(Array(3).fill({ status: 202, type: 'application/json; charset=utf-8', length: String(ACCEPTED.length), body: ACCEPTED }));
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
    expect(await webhookCount(t, 'generic', 'accepted')).toBe(counts.accepted + 1);
    expect(await webhookCount(t, 'generic', 'unknown_repository')).toBe(counts.unknown + 1);
    expect(await webhookCount(t, 'generic', 'ignored')).toBe(counts.ignored + 1);
    expect(logLinesOf(t, unknown.headers['webhook-id']!)[0]).toMatchObject({ result: 'unknown_repository', status: 202 });
    expect(logLinesOf(t, disabled.headers['webhook-id']!)[0]).toMatchObject({ result: 'ignored', status: 202 });

    // Refusals do not depend on the name either.
    const refused = await Promise.all(
      ['infra', 'no-such-source', 'dormant'].map((name) => t.server.inject(genericDelivery(name, { secret: standardSecret() }))),
    );
    expect(refused.map(visible)).toEqual(Array(3).fill(visible(refused[0]!)));
    expect(refused[0]!.statusCode).toBe(401);
  });

  it.each([
    ['6 minutes old', -6 * MINUTE, 401],
    ['6 minutes ahead', 6 * MINUTE, 401],
    ['1 hour old', -60 * MINUTE, 401],
    ['4 minutes old', -4 * MINUTE, 202],
    ['4 minutes ahead', 4 * MINUTE, 202],
  ] as const)('a timestamp %s → %i', async (_label, offsetMs, status) => {
    const before = await requestCounts(t);
    const response = await t.server.inject(genericDelivery('infra', { at: new Date(Date.now() + offsetMs) }));
    expect(response.statusCode).toBe(status);
    if (status === 401) expect(response.json()).toEqual({ error: 'unauthorized', message: expect.stringMatching(/^the delivery is not signed as Standard Webhooks requires/) });
    else expect(response.body).toBe(ACCEPTED);
    expect(await requestCounts(t)).toEqual(status === 202 ? { ...before, infra: before.infra! + 1 } : before);
  });

  it('several signatures (a key rotation): one valid among them is enough; none valid → 401', async () => {
    const before = await requestCounts(t);
    const id = deliveryId();
    const at = new Date();
    const body = '{"ref":"refs/heads/main"}';
    const old = new Webhook(standardSecret()).sign(id, at, body);
    const current = new Webhook(SECRETS.generic).sign(id, at, body);
    const asymmetric = `v1a,${Buffer.alloc(64, 7).toString('base64')}`;
    const rotated = await t.server.inject(genericDelivery('infra', { id, at, body, signature: `${old} ${asymmetric} ${current}` }));
    expect(visible(rotated)).toMatchObject({ status: 202, body: ACCEPTED });
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });

    const other = deliveryId();
    const noneValid = `${new Webhook(standardSecret()).sign(other, at, body)} ${asymmetric} ${new Webhook(standardSecret()).sign(other, at, body)}`;
    expect((await t.server.inject(genericDelivery('infra', { id: other, at, body, signature: noneValid }))).statusCode).toBe(401);
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
  });

  it('a wrong secret, a changed body or id, missing or malformed headers, the old X-Forgesync-Signature-256 → 401 with one fixed message; nothing recorded', async () => {
    const before = await requestCounts(t);
    const id = deliveryId();
    const at = new Date();
    const seconds = String(Math.floor(at.getTime() / 1000));
    const signed = genericDelivery('infra', { id, at });
    const cases = [
      genericDelivery('infra', { secret: standardSecret() }),
      genericDelivery('infra', { secret: `whsec_${Buffer.from(SECRETS.github).toString('base64')}` }),
      { ...signed, payload: '{"ref":"refs/heads/other"}' },
      { ...signed, headers: { ...signed.headers, 'webhook-id': deliveryId() } },
      { ...signed, headers: { ...signed.headers, 'webhook-timestamp': String(Number(seconds) - 1) } },
      genericDelivery('infra', { at: new Date(at.getTime() - 6 * MINUTE) }),
      genericDelivery('infra', { at: new Date(at.getTime() + 6 * MINUTE) }),
      genericDelivery('infra', { omit: ['webhook-id'] }),
      genericDelivery('infra', { omit: ['webhook-timestamp'] }),
      genericDelivery('infra', { omit: ['webhook-signature'] }),
      genericDelivery('infra', { signature: 'garbage' }),
      genericDelivery('infra', { signature: '' }),
      // The id is signed as the text before the first ".": ids holding one are refused.
      genericDelivery('infra', { id: 'msg.1' }),
      { ...signed, headers: { ...signed.headers, 'webhook-timestamp': `${seconds}.5` } },
      { ...signed, headers: { ...signed.headers, 'webhook-timestamp': `${seconds}abc` } },
      // The old scheme, which accepted one signature over an empty body for every name.
      { method: 'POST' as const, url: '/hooks/generic/infra', headers: { 'x-forgesync-signature-256': signBody(SECRETS.generic, '') } },
    ];
    const answers = [];
    for (const delivery of cases) answers.push(visible(await t.server.inject(delivery)));
    expect(answers[0]).toMatchObject({ status: 401 });
    const message = JSON.parse(answers[0]!.body);
    expect(message).toEqual({ error: 'unauthorized', message: expect.stringMatching(/Standard Webhooks.*FORGESYNC_GENERIC_WEBHOOK_SECRET/) });
    expect(answers).toEqual(Array(cases.length).fill(answers[0]));
    expect(await requestCounts(t)).toEqual(before);

    // The refusals claimed nothing: the id of the tampered delivery is still free for the real one.
    expect(visible(await t.server.inject(signed))).toMatchObject({ status: 202, body: ACCEPTED });
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
    // The log says which check failed, in the words of the spec's libraries.
    const reasons = t.logs.lines.filter((line) => line.event === 'webhook' && line.provider === 'generic' && line.status === 401).map((line) => line.reason);
    expect(new Set(reasons)).toEqual(
      new Set(['missing required headers', 'invalid signature headers', 'message timestamp too old', 'message timestamp too new', 'no matching signature found']),
    );
  });

  it('malformed JSON → 400, and the id stays free; a body over the limit → 413', async () => {
    const before = await requestCounts(t);
    const id = deliveryId();
    const broken = await t.server.inject(genericDelivery('infra', { id, body: '{"broken"' }));
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toMatchObject({ error: 'invalid_payload' });
    const large = await t.server.inject(genericDelivery('infra', { body: JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }) }));
    expect(large.statusCode).toBe(413);
    expect(await requestCounts(t)).toEqual(before);
    expect((await t.server.inject(genericDelivery('infra', { id }))).statusCode).toBe(202);
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
  });

  it('a delivery whose request cannot be recorded → 500, and its id stays free for the sender\'s retry', async () => {
    const before = await requestCounts(t);
    const delivery = genericDelivery('infra');
    const failing = vi.spyOn(t.app.replication, 'requestSync').mockRejectedValueOnce(new Error('registry unavailable'));
    try {
      const failed = await t.server.inject(delivery);
      expect(failed.statusCode).toBe(500);
      expect(failed.json()).toMatchObject({ error: 'internal' });
      expect(await requestCounts(t)).toEqual(before);
      const retried = await t.server.inject(delivery);
      expect(visible(retried)).toMatchObject({ status: 202, body: ACCEPTED });
      expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
      expect(failing).toHaveBeenCalledTimes(2);
    } finally {
      failing.mockRestore();
    }
  });

  it('interoperates with the standardwebhooks library: its verify() accepts the very delivery forgesync accepts over a socket', async () => {
    const before = await requestCounts(t);
    const body = JSON.stringify({ type: 'repository.pushed', data: { ref: 'refs/heads/main', note: 'ünïcødé ✓' } });
    const delivery = genericDelivery('infra', { body });
    // The library, as a receiver, verifies what it signed as a sender (and refuses another key)…
    expect(new Webhook(SECRETS.generic).verify(body, delivery.headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(standardSecret()).verify(body, delivery.headers)).toThrow(/No matching signature/);
    // …and forgesync accepts the same bytes and headers, sent by a real HTTP client.
    const response = await fetch(`${t.url}/hooks/generic/infra`, { method: 'POST', headers: delivery.headers, body });
    expect(response.status).toBe(202);
    expect(await response.text()).toBe(ACCEPTED);
    expect(await requestCounts(t)).toEqual({ ...before, infra: before.infra! + 1 });
  });
});

describe.each(['sqlite', 'postgres'] as const)('generic webhook ids across processes sharing one %s registry', (kind) => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const processes: { app: TestServer['app']; server: ForgesyncServer }[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    for (let i = 0; i < 2; i++) {
      const { app } = await openTestForgesync(testConfig(database.url, WEBHOOK_ENV));
      processes.push({ app, server: await buildServer(app, { tokens: { admin: testSecret('SHARED_ADMIN_TOKEN'), read: undefined } }) });
    }
    await processes[0]!.app.replication.addSource({ url: 'https://git.example.com/ops/shared.git', name: 'shared' });
  });
  afterAll(async () => {
    for (const { app, server } of processes) {
      await server.close();
      await app.close();
    }
    await database?.drop();
  });

  const seq = async () => (await processes[1]!.app.replication.getSource('shared')).registry.requestedSeq;

  it('one process acts on a delivery; the other, given the same delivery, answers the same and records nothing', async () => {
    const start = await seq();
    const delivery = genericDelivery('shared');
    const [a, b] = processes;
    const first = await a!.server.inject(delivery);
    const second = await b!.server.inject(delivery);
    expect(visible(second)).toEqual(visible(first));
    expect(first.body).toBe(ACCEPTED);
    expect(await seq()).toBe(start + 1);
  });

  it('the same delivery sent to both processes at once, many times, is recorded once', async () => {
    const start = await seq();
    const delivery = genericDelivery('shared');
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => processes[i % 2]!.server.inject(delivery)));
    expect(new Set(answers.map((r) => `${r.statusCode} ${r.body}`))).toEqual(new Set([`202 ${ACCEPTED}`]));
    expect(await seq()).toBe(start + 1);
  });
});
