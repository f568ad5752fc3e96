import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FeedSecretUnavailableError } from '../../src/credentials/errors.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { NatsListener } from './sinks/nats-listener.js';

/*
 * What an admin token can make a feed do with the server's secrets and disk,
 * against a hostile NATS listener on 127.0.0.1 that records the CONNECT line
 * of every client: a feed's secret is a feed secret the operator defined and
 * bound to the sink's host, never an environment variable the caller names,
 * and a file sink writes only inside the feed file root.
 */

const TOKEN = testSecret('FEED_ATTACK_CREDENTIAL', 'ghp_');
const NATS_TOKEN = testSecret('FEED_NATS_TOKEN');
/** Set in this process, so that "set but not a feed secret" and "unset" can be told apart if anything leaked it. */
const ENVIRONMENT = {
  FORGESYNC_CREDENTIAL_GITHUB_BOT: TOKEN,
  FORGESYNC_CREDENTIAL_GITHUB_BOT_HOSTS: 'github.com',
  FORGESYNC_TEST_FEED_PLAIN_VARIABLE: TOKEN,
};

describe('feed secrets and the feed file root, over /api/feeds', () => {
  let t: TestServer;
  let nats: NatsListener;
  let secretsFile: string;
  let natsSink: string;

  const writeSecrets = (natsHosts: string[]) =>
    writeFileSync(
      secretsFile,
      JSON.stringify({
        github_bot: { token: TOKEN, hosts: ['github.com'] },
        'feed:nats_key': { secret: NATS_TOKEN, hosts: natsHosts },
        'feed:elsewhere': { secret: NATS_TOKEN, hosts: ['nats.internal:4222'] },
      }),
    );
  const add = (payload: Record<string, unknown>) => t.server.inject({ method: 'POST', url: '/api/feeds', headers: t.auth(), payload });
  const feedNames = async () => ((await t.server.inject({ url: '/api/feeds', headers: t.auth() })).json() as { name: string }[]).map((feed) => feed.name);

  beforeAll(async () => {
    Object.assign(process.env, ENVIRONMENT);
    nats = await NatsListener.start();
    natsSink = `nats://127.0.0.1:${nats.port}/forgesync.changes`;
    secretsFile = join(mkdtempSync(join(tmpdir(), 'forgesync-feed-secrets-')), 'secrets.json');
    writeSecrets([`127.0.0.1:${nats.port}`]);
    t = await startTestServer({ env: { FORGESYNC_SECRETS_FILE: secretsFile, FORGESYNC_FEED_POLL_INTERVAL: '10m', FORGESYNC_FEED_TIMEOUT: '3s' } });
    const upstream = Upstream.create();
    await t.app.replication.addSource({ name: 'secret-src', url: upstream.bare });
    await t.app.replication.sync('secret-src');
  });
  afterAll(async () => {
    for (const name of Object.keys(ENVIRONMENT)) delete process.env[name];
    await t?.close();
    await nats?.stop();
  });

  it('refuses secretEnv, saying it was replaced by secret and how a feed secret is defined; nothing is stored or sent', async () => {
    const refused = await add({ name: 'stolen', sink: natsSink, secretEnv: 'FORGESYNC_CREDENTIAL_GITHUB_BOT' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toMatch(/^secretEnv \(--secret-env\) was replaced by secret \(--secret <name>\), the name of a feed secret: the operator defines feed secrets, .*FORGESYNC_FEED_SECRET_<NAME>/);
    expect(refused.body).not.toContain(TOKEN);
    expect(await feedNames()).toEqual([]);
    expect(nats.connections).toBe(0);
  });

  it('answers every secret that is not a feed secret bound to the sink with one and the same 400', async () => {
    const bodies = new Set<string>();
    for (const secret of ['FORGESYNC_CREDENTIAL_GITHUB_BOT', 'FORGESYNC_TEST_FEED_PLAIN_VARIABLE', 'FORGESYNC_NEVER_SET_ANYWHERE', 'github_bot', 'elsewhere', 'env:FORGESYNC_CREDENTIAL_GITHUB_BOT', 'file:/etc/passwd', '']) {
      const refused = await add({ name: 'probe', sink: natsSink, secret });
      expect(refused.statusCode, secret).toBe(400);
      bodies.add(refused.body);
    }
    // A bound secret does not help on another host.
    bodies.add((await add({ name: 'probe', sink: 'nats://127.0.0.2:4222/forgesync.changes', secret: 'nats_key' })).body);
    bodies.add((await add({ name: 'probe', sink: `http://127.0.0.1:${nats.port + 1}/hook`, secret: 'nats_key' })).body);
    expect([...bodies]).toHaveLength(1);
    expect(JSON.parse([...bodies][0]!).message).toBe(new FeedSecretUnavailableError().message);
    expect([...bodies][0]).not.toContain(TOKEN);
    expect(await feedNames()).toEqual([]);
    expect(nats.connections).toBe(0);
  });

  it('uses a bound feed secret with its host only, and stops using it the moment the operator takes the binding away', async () => {
    const added = await add({ name: 'nats', sink: natsSink, secret: 'nats_key', sources: 'secret-src' });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({ name: 'nats', secret: 'nats_key' });
    expect(added.json()).not.toHaveProperty('secretEnv');
    expect(added.body).not.toContain(NATS_TOKEN);
    // The first run offers the token to the host it is bound to (the listener refuses it).
    expect((await t.app.feeds.resync('nats', { wait: true })).lastError).toMatch(/cannot connect to NATS/);
    expect(nats.connects.map((connect) => connect.auth_token)).toEqual([NATS_TOKEN]);

    writeSecrets(['nats.internal:4222']);
    const connections = nats.connections;
    const failure = await t.app.feeds.resync('nats', { wait: true }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(FeedSecretUnavailableError);
    const status = (await t.server.inject({ url: '/api/feeds/nats', headers: t.auth() })).json();
    expect(status.lastError).toBe(new FeedSecretUnavailableError().message);
    // Not sent again, nor sent without a token.
    expect(nats.connections).toBe(connections);
    expect(nats.connects).toHaveLength(1);
    writeSecrets([`127.0.0.1:${nats.port}`]);
    expect((await t.server.inject({ method: 'DELETE', url: '/api/feeds/nats', headers: t.auth() })).statusCode).toBe(204);
  });

  it('refuses a file sink outside the feed file root, or reached through a link leading out, naming the root', async () => {
    const root = t.app.config.feedFileRoot;
    const outside = mkdtempSync(join(tmpdir(), 'forgesync-feed-outside-'));
    const rootUrl = pathToFileURL(root).href;
    for (const sink of [pathToFileURL(outside).href, `${rootUrl}/../elsewhere`, `${rootUrl}/a/%2e%2e/%2e%2e/escape`, 'file:///etc']) {
      const refused = await add({ name: 'files', sink });
      expect(refused.statusCode, sink).toBe(400);
      // The API names the root by its placeholder (the operator's CLI shows the path).
      expect(refused.json().message, sink).toContain('a file sink writes only inside the feed file root <feedFiles> (FORGESYNC_FEED_FILE_ROOT)');
    }
    mkdirSync(root, { recursive: true });
    symlinkSync(outside, join(root, 'link'));
    const linked = await add({ name: 'files', sink: `${rootUrl}/link/orders` });
    expect(linked.statusCode).toBe(400);
    expect(linked.json().message).toMatch(/symbolic links leading out of it are refused/);
    expect((await add({ name: 'files', sink: `${rootUrl}/orders`, secret: 'nats_key' })).json().message).toMatch(/a file sink takes no secret/);
    expect(await feedNames()).toEqual([]);

    // Inside the root: added, and written there.
    expect((await add({ name: 'files', sink: `${rootUrl}/orders`, sources: 'secret-src' })).statusCode).toBe(201);
    expect((await t.app.feeds.resync('files', { wait: true })).lastRun).toMatchObject({ outcome: 'delivered' });
    expect(readdirSync(join(root, 'orders')).filter((name) => name.endsWith('.ndjson')).length).toBeGreaterThan(0);
    expect(readdirSync(outside)).toEqual([]);
  });
});
