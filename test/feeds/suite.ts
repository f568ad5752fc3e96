import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ForgesyncConfig } from '../../src/app/config.js';
import type { FeedStatus } from '../../src/feeds/status.js';
import { Webhook } from 'standardwebhooks';
import type { Forgesync } from '../../src/app/forgesync.js';
import type { CloudEvent } from '../../src/feeds/events.js';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, type CapturedLogs, type TestDatabase } from '../support/harness.js';
import { WebhookReceiver } from './sinks/http-receiver.js';

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));

/** Quick retries (a poison change is dead after 6 failures, about 1.5 s), small full-sync chunks, a fast poll. */
const FEED_ENV = { FORGESYNC_FEED_RETRY_BASE: '50ms', FORGESYNC_FEED_RETRY_MAX: '1s', FORGESYNC_FEED_POLL_INTERVAL: '100ms', FORGESYNC_FEED_MAX_ATTEMPTS: '6', FORGESYNC_FEED_CHUNK: '5' };

/** Waits until feed `name` has no lag and no full sync left. */
async function caughtUp(app: Forgesync, name: string, timeoutMs = 30_000): Promise<FeedStatus> {
  let last: FeedStatus | undefined;
  try {
    return await eventually(
      `feed ${name} to catch up`,
      async () => {
        last = await app.feeds.status(name);
        return last.lag.changes === 0 && !last.fullSync.requested && !last.fullSync.running ? last : null;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last)}`);
  }
}

/** Events of `type` prefix for `subject`, in arrival order. */
function refEvents(receiver: WebhookReceiver, source: string, ref: string): CloudEvent[] {
  return receiver.accepted.map((entry) => entry.event).filter((event) => event.type.startsWith('dev.forgesync.ref.') && (event.data as { source: string }).source === source && event.subject === ref);
}

/**
 * Fails when a key's events arrived out of order: by key, the change
 * numbers of the events (a full sync's carry the number of the change that
 * made the state) never go down, a redelivery of the same event aside.
 */
function expectPerKeyOrder(receiver: WebhookReceiver, source: string): void {
  const last = new Map<string, { seq: number; id: string }>();
  for (const { event } of receiver.accepted) {
    if ((event.data as { source?: string }).source !== source) continue;
    const key = `${event.type.startsWith('dev.forgesync.ref.') ? 'ref' : 'state'} ${event.subject ?? ''}`;
    const seq = Number(event.sequence);
    const previous = last.get(key);
    if (previous && previous.id !== event.id) expect(seq, `${key}: ${event.id} arrived after ${previous.id}`).toBeGreaterThanOrEqual(previous.seq);
    last.set(key, { seq, id: event.id });
  }
}

/** The commits a ref went through, as its events say, duplicates (same id) collapsed. */
function history(events: CloudEvent[]): string[] {
  const seen = new Set<string>();
  const afters: string[] = [];
  for (const event of events) {
    if (seen.has(event.id)) continue;
    seen.add(event.id);
    afters.push((event.data as { after: string }).after);
  }
  return afters;
}

/**
 * The feeds end to end on one registry database: real upstream
 * repositories, real syncs, a real HTTP receiver verifying Standard
 * Webhooks signatures with the `standardwebhooks` package.
 */
export function describeFeeds(kind: 'sqlite' | 'postgres'): void {
  describe(`feeds on ${kind}`, () => {
    let database: TestDatabase;
    let app: Forgesync;
    let logs: CapturedLogs;
    let receiver: WebhookReceiver;
    let config: ForgesyncConfig;
    /** A feed secret the operator defined in the environment, bound to the receiver (child processes inherit it). */
    const secretName = `suite_${kind}`;
    const secretEnv = `FORGESYNC_FEED_SECRET_${secretName.toUpperCase()}`;
    const secret = `whsec_${Buffer.from(testSecret('FEED_KEY')).toString('base64')}`;

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      receiver = await WebhookReceiver.start();
      process.env[secretEnv] = secret;
      process.env[`${secretEnv}_HOSTS`] = `127.0.0.1:${receiver.port}`;
      receiver.verifier = new Webhook(secret);
      config = testConfig(database.url, FEED_ENV);
      ({ app, logs } = await openTestForgesync(config));
      await app.startService();
    });

    afterAll(async () => {
      await app?.close();
      await receiver?.stop();
      await database?.drop();
      delete process.env[secretEnv];
      delete process.env[`${secretEnv}_HOSTS`];
    });

    it('delivers every ref change of a sequence of pushes, in order per ref, signed', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'pushes', url: upstream.bare });
      await app.replication.sync('pushes');
      await app.feeds.add({ name: 'all', sink: receiver.url('/all'), secret: secretName, sources: 'pushes' });
      const expected: string[] = [];
      for (let i = 0; i < 6; i++) {
        expected.push(upstream.commit('main'));
        if (i % 2 === 0) upstream.commit('topic');
        await app.replication.sync('pushes');
      }
      upstream.deleteBranch('topic');
      await app.replication.sync('pushes');
      await caughtUp(app, 'all');
      const main = refEvents(receiver, 'pushes', 'refs/heads/main');
      // The full sync's state of main first (the first commit), then each push in order.
      expect(history(main).slice(-expected.length)).toEqual(expected);
      const topic = refEvents(receiver, 'pushes', 'refs/heads/topic');
      expect(topic.at(-1)!.type).toBe('dev.forgesync.ref.deleted');
      expect(topic[0]!.type).toBe('dev.forgesync.ref.created');
      for (const event of main) {
        expect(event).toMatchObject({ specversion: '1.0', datacontenttype: 'application/json' });
        expect(event.source).toMatch(/^forgesync:\/\/[^/]+\/replication\/pushes$/);
        expect(event.sequence).toMatch(/^\d{20}$/);
      }
      expectPerKeyOrder(receiver, 'pushes');
      // A force push says so; fast-forwards do not.
      expect(main.slice(-expected.length).every((event) => (event.data as { forced: boolean }).forced === false)).toBe(true);
      const rewritten = upstream.forcePush('main');
      await app.replication.sync('pushes');
      await caughtUp(app, 'all');
      expect(refEvents(receiver, 'pushes', 'refs/heads/main').at(-1)).toMatchObject({ type: 'dev.forgesync.ref.updated', data: { before: expected.at(-1), after: rewritten, forced: true } });
      expect(receiver.rejectedSignatures).toEqual([]);
      const status = await app.feeds.status('all');
      expect(status).toMatchObject({ ackedSeq: status.headSeq, deadLetters: 0, retrying: 0, holder: null });
      expect(status.sink).not.toContain(secret);
    });

    it('logs the skip line for a partial sync during a full sync, and loses nothing', async () => {
      const upstream = Upstream.create();
      for (let i = 0; i < 12; i++) upstream.tag(`v${i}`, 'HEAD', false);
      await app.replication.addSource({ name: 'tagged', url: upstream.bare });
      await app.replication.sync('tagged');
      // A second instance on the same registry: another process as far as leases go.
      const other = await openTestForgesync(config);
      try {
        const feed = await other.app.feeds.add({ name: 'slow', sink: receiver.url('/slow'), sources: 'tagged', secret: secretName });
        expect(feed.fullSync.requested).toBe(true);
        // The full sync's deliveries are held until the partial sync has found it running, however slow the machine.
        let release!: () => void;
        receiver.hold = new Promise<void>((resolve) => (release = resolve));
        const full = other.app.feeds.resync('slow', { wait: true });
        await eventually('the full sync to be running', async () => (await app.feeds.status('slow')).holder?.startsWith('full sync(') ?? false);
        const pushed = upstream.commit('main');
        await app.replication.sync('tagged');
        const partialDone = app.feeds.sync('slow', { wait: true });
        const skipLine = () => [...logs.lines, ...other.logs.lines].find((line) => line.feed === 'slow' && line.operation === 'partial sync' && typeof line.status === 'string');
        const skip = await eventually('the partial sync to log its skip', async () => skipLine() ?? null);
        receiver.hold = null;
        release();
        const partial = await partialDone;
        await full;
        expect(skip?.status).toBe(`operation skipped - process locked by "full sync(${process.pid})"`);
        // The line carries the seed's three fields in its order.
        expect((logs.text + other.logs.text).includes(`"feed":"slow","operation":"partial sync","status":"operation skipped - process locked by \\"full sync(${process.pid})\\""`)).toBe(true);
        const status = await caughtUp(app, 'slow');
        expect(status.skips).toBeGreaterThan(0);
        expect(partial.name).toBe('slow');
        expect(status.holder).toBeNull();
        expect(history(refEvents(receiver, 'tagged', 'refs/heads/main')).at(-1)).toBe(pushed);
        // Every tag exported by the full sync, once per chunk boundary at most.
        const tags = new Set(receiver.accepted.map((entry) => entry.event).filter((event) => (event.data as { source?: string }).source === 'tagged' && event.subject?.startsWith('refs/tags/')).map((event) => event.subject));
        expect(tags.size).toBe(12);
      } finally {
        receiver.hold = null;
        await other.app.close();
      }
    });

    it('retries a sink that answers 500 for a while, then delivers everything in order', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'flaky', url: upstream.bare });
      await app.replication.sync('flaky');
      await app.feeds.add({ name: 'flaky', sink: receiver.url('/flaky'), sources: 'flaky', secret: secretName });
      await caughtUp(app, 'flaky');
      let failing = true;
      receiver.answer = (request) => (request.path === '/flaky' && failing ? { status: 500, body: 'try later' } : null);
      const pushed: string[] = [];
      for (let i = 0; i < 3; i++) {
        pushed.push(upstream.commit('main'));
        await app.replication.sync('flaky');
      }
      const during = await eventually('a failed delivery to be recorded', async () => {
        const status = await app.feeds.status('flaky');
        return status.lastError?.includes('500') ? status : null;
      });
      expect(during.lag.changes).toBeGreaterThan(0);
      failing = false;
      const status = await caughtUp(app, 'flaky');
      receiver.answer = null;
      expect(status.deadLetters).toBe(0);
      expect(history(refEvents(receiver, 'flaky', 'refs/heads/main')).slice(-3)).toEqual(pushed);
    });

    it('waits as long as a Retry-After says before sending again', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'throttled', url: upstream.bare });
      await app.replication.sync('throttled');
      await app.feeds.add({ name: 'throttled', sink: receiver.url('/throttled'), sources: 'throttled', secret: secretName });
      await caughtUp(app, 'throttled');
      const tries: number[] = [];
      receiver.answer = (request) => {
        if (request.path !== '/throttled') return null;
        tries.push(Date.now());
        return tries.length === 1 ? { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' } : null;
      };
      const pushed = upstream.commit('main');
      await app.replication.sync('throttled');
      await caughtUp(app, 'throttled');
      receiver.answer = null;
      expect(tries.length).toBeGreaterThanOrEqual(2);
      // The feed's own backoff here is at most 1 s: only the answer's 2 s explains the wait.
      expect(tries[1]! - tries[0]!).toBeGreaterThanOrEqual(1900);
      expect(history(refEvents(receiver, 'throttled', 'refs/heads/main')).at(-1)).toBe(pushed);
    });

    it('sends a poison change to the dead letters while other keys flow, and replays it', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'poison', url: upstream.bare });
      await app.replication.sync('poison');
      await app.feeds.add({ name: 'poison', sink: receiver.url('/poison'), sources: 'poison', secret: secretName });
      await caughtUp(app, 'poison');
      let refusing = true;
      receiver.answer = (request) => (request.path === '/poison' && refusing && request.body.includes('refs/heads/poison') ? { status: 400, body: 'cannot take this one' } : null);
      const poisoned = upstream.commit('poison');
      await app.replication.sync('poison');
      const mainCommits = [upstream.commit('main'), upstream.commit('main')];
      await app.replication.sync('poison');
      await eventually('the poison change to be dead', async () => (await app.feeds.status('poison')).deadLetters === 1);
      await eventually('main to flow past it', () => history(refEvents(receiver, 'poison', 'refs/heads/main')).at(-1) === mainCommits[1]);
      const letters = await app.feeds.deadLetters('poison');
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ type: 'dev.forgesync.ref.created', subject: 'refs/heads/poison', attempts: 6 });
      expect(letters[0]!.lastError).toContain('400');
      expect((await app.feeds.status('poison')).lag.changes).toBe(1);
      refusing = false;
      expect(await app.feeds.retryDeadLetters('poison')).toBe(1);
      const status = await caughtUp(app, 'poison');
      receiver.answer = null;
      expect(status.deadLetters).toBe(0);
      expect(history(refEvents(receiver, 'poison', 'refs/heads/poison'))).toContain(poisoned);
      // Replay: the whole history of the source again, with the same ids.
      const before = refEvents(receiver, 'poison', 'refs/heads/main').length;
      const firstSeq = Number(refEvents(receiver, 'poison', 'refs/heads/main').find((event) => event.type === 'dev.forgesync.ref.updated')!.sequence);
      await app.feeds.replay('poison', firstSeq);
      await eventually('the replay to deliver', () => refEvents(receiver, 'poison', 'refs/heads/main').length >= before + 1).catch(async (error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(await app.feeds.status('poison'))} from ${firstSeq}`);
      });
      const replayed = refEvents(receiver, 'poison', 'refs/heads/main').slice(before);
      expect(replayed.map((event) => Number(event.sequence))).toEqual([firstSeq]);
      expect(replayed[0]!.id).toBe(refEvents(receiver, 'poison', 'refs/heads/main').find((event) => Number(event.sequence) === firstSeq)!.id);
    });

    it('redelivers, with the same id, an event whose sender was SIGKILLed before the ack', async () => {
      // A registry of its own, served by nobody: the child process is the only one running the feed.
      const quietDatabase = await createTestDatabase(kind);
      const quietConfig = testConfig(quietDatabase.url, FEED_ENV);
      const quiet = await openTestForgesync(quietConfig);
      try {
        const upstream = Upstream.create();
        await quiet.app.replication.addSource({ name: 'killed-feed', url: upstream.bare });
        await quiet.app.replication.sync('killed-feed');
        await quiet.app.feeds.add({ name: 'killed', sink: receiver.url('/killed'), sources: 'killed-feed', types: 'dev.forgesync.ref.*', secret: secretName });
        await quiet.app.feeds.resync('killed', { wait: true });
        const pushed = upstream.commit('main');
        await quiet.app.replication.sync('killed-feed');
        let killed = false;
        const child = spawn(process.execPath, [CLI, 'feed', 'sync', 'killed', '--wait'], {
          env: {
            ...process.env,
            FORGESYNC_DATA_DIR: quietConfig.dataDir,
            FORGESYNC_DATABASE_URL: quietConfig.databaseUrl,
            FORGESYNC_ALLOW_NETWORKS: quietConfig.allowNetworks!.join(','),
            FORGESYNC_LEASE_TTL: '2s',
          },
          stdio: 'ignore',
        });
        // Killed with the request sent and the answer not yet given: the sink never acknowledged it.
        receiver.answer = (request) => {
          if (request.path !== '/killed' || killed) return null;
          killed = true;
          child.kill('SIGKILL');
          return 'hang';
        };
        await once(child, 'exit');
        expect(killed).toBe(true);
        receiver.releaseHanging();
        receiver.answer = null;
        const sent = receiver.requests.filter((request) => request.path === '/killed' && request.body.includes(pushed));
        expect(sent).toHaveLength(1);
        expect((await quiet.app.feeds.status('killed')).lag.changes).toBe(1);
        // The dead child's lease runs out, then the change goes again: same id, nothing lost.
        await quiet.app.feeds.sync('killed', { wait: true });
        const status = await caughtUp(quiet.app, 'killed');
        expect(status.ackedSeq).toBe(status.headSeq);
        const delivered = refEvents(receiver, 'killed-feed', 'refs/heads/main').filter((event) => (event.data as { after: string }).after === pushed);
        expect(delivered).toHaveLength(1);
        expect(delivered[0]!.id).toBe((JSON.parse(sent[0]!.body) as CloudEvent).id);
      } finally {
        receiver.answer = null;
        await quiet.app.close();
        await quietDatabase.drop();
      }
    });

    it('keeps per-ref order with two processes running the same feed', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'shared', url: upstream.bare });
      await app.replication.sync('shared');
      // A second `forgesync serve` on the same registry: its feed runs compete with this process's.
      const serve = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1'], {
        env: {
          ...process.env,
          FORGESYNC_DATA_DIR: config.dataDir,
          FORGESYNC_DATABASE_URL: config.databaseUrl,
          FORGESYNC_ALLOW_NETWORKS: config.allowNetworks!.join(','),
          FORGESYNC_GIT_PROTOCOLS: config.gitProtocols,
          FORGESYNC_LEASE_TTL: '3s',
          FORGESYNC_ADMIN_TOKEN: testSecret('FEED_SERVE_TOKEN'),
          ...FEED_ENV,
        },
        stdio: 'ignore',
      });
      try {
        await app.feeds.add({ name: 'shared', sink: receiver.url('/shared'), sources: 'shared', secret: secretName });
        const pushed: string[] = [];
        for (let i = 0; i < 12; i++) {
          pushed.push(upstream.commit('main'));
          if (i % 3 === 0) upstream.commit(`branch-${i}`);
          await app.replication.sync('shared');
        }
        const status = await caughtUp(app, 'shared');
        expect(history(refEvents(receiver, 'shared', 'refs/heads/main')).slice(-12)).toEqual(pushed);
        expectPerKeyOrder(receiver, 'shared');
        expect(status.lastRun).not.toBeNull();
        expect(serve.exitCode).toBeNull();
      } finally {
        serve.kill('SIGTERM');
        await once(serve, 'exit');
      }
    });

    it('publishes every ref change to NATS JetStream with Nats-Msg-Id = the event id, in order', async () => {
      const unique = randomUUID().replace(/-/g, '');
      const stream = `forgesync_feed_${unique}`;
      const subject = `forgesync.feed.${unique}`;
      let nc: NatsConnection;
      try {
        nc = await connect({ servers: '127.0.0.1:4222', timeout: 5000 });
      } catch (error) {
        throw new Error(`NATS with JetStream at 127.0.0.1:4222 is not reachable (${(error as Error).message}); .ci/run starts it`);
      }
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [subject] });
      try {
        const upstream = Upstream.create();
        await app.replication.addSource({ name: 'to-nats', url: upstream.bare });
        await app.replication.sync('to-nats');
        await app.feeds.add({ name: 'nats', sink: `nats://127.0.0.1:4222/${subject}`, sources: 'to-nats' });
        const pushed: string[] = [];
        for (let i = 0; i < 4; i++) {
          pushed.push(upstream.commit('main'));
          await app.replication.sync('to-nats');
        }
        await caughtUp(app, 'nats');
        const count = (await jsm.streams.info(stream)).state.messages;
        const consumer = await jetstream(nc).consumers.get(stream);
        const messages = await consumer.fetch({ max_messages: count, expires: 5000 });
        const events: CloudEvent[] = [];
        for await (const message of messages) {
          const event = message.json<CloudEvent>();
          expect(message.headers?.get('Nats-Msg-Id')).toBe(event.id);
          events.push(event);
          if (events.length === count) break;
        }
        const main = events.filter((event) => event.subject === 'refs/heads/main');
        expect(history(main).slice(-4)).toEqual(pushed);
        expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
      } finally {
        await jsm.streams.delete(stream).catch(() => undefined);
        await nc.close();
      }
    });

    it('keeps everything while paused (lag grows), and disables a sink that answers 410 until resumed', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'paused', url: upstream.bare });
      await app.replication.sync('paused');
      await app.feeds.add({ name: 'paused', sink: receiver.url('/paused'), sources: 'paused', secret: secretName });
      await caughtUp(app, 'paused');
      await app.feeds.pause('paused');
      const pushed = [upstream.commit('main'), upstream.commit('side')];
      await app.replication.sync('paused');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const paused = await app.feeds.status('paused');
      expect(paused).toMatchObject({ paused: true, lag: { changes: 2 } });
      expect(refEvents(receiver, 'paused', 'refs/heads/side')).toEqual([]);
      let gone = true;
      receiver.answer = (request) => (request.path === '/paused' && gone ? { status: 410, body: 'this hook was deleted' } : null);
      await app.feeds.resume('paused');
      const disabled = await eventually('the sink to be disabled', async () => {
        const status = await app.feeds.status('paused');
        return status.disabled ? status : null;
      });
      expect(disabled.disabled).toContain('410');
      expect(disabled.lag.changes).toBe(2);
      expect(disabled.deadLetters).toBe(0);
      gone = false;
      await app.feeds.resume('paused');
      const status = await caughtUp(app, 'paused');
      receiver.answer = null;
      expect(status.disabled).toBeNull();
      expect(history(refEvents(receiver, 'paused', 'refs/heads/main')).at(-1)).toBe(pushed[0]);
      expect(history(refEvents(receiver, 'paused', 'refs/heads/side'))).toEqual([pushed[1]]);
    });

    it('resumes a full sync from its chunk cursor after the process running it was killed', async () => {
      const quietDatabase = await createTestDatabase(kind);
      const quietConfig = testConfig(quietDatabase.url, FEED_ENV);
      const quiet = await openTestForgesync(quietConfig);
      try {
        const upstream = Upstream.create();
        for (let i = 0; i < 14; i++) upstream.tag(`t${String(i).padStart(2, '0')}`, 'HEAD', false);
        await quiet.app.replication.addSource({ name: 'chunked', url: upstream.bare });
        await quiet.app.replication.sync('chunked');
        await quiet.app.feeds.add({ name: 'chunked', sink: receiver.url('/chunked'), sources: 'chunked', types: 'dev.forgesync.ref.*', secret: secretName });
        const child = spawn(process.execPath, [CLI, 'feed', 'resync', 'chunked', '--wait'], {
          env: { ...process.env, FORGESYNC_DATA_DIR: quietConfig.dataDir, FORGESYNC_DATABASE_URL: quietConfig.databaseUrl, FORGESYNC_ALLOW_NETWORKS: quietConfig.allowNetworks!.join(','), FORGESYNC_LEASE_TTL: '2s', FORGESYNC_FEED_CHUNK: '5' },
          stdio: 'ignore',
        });
        // Killed during its third chunk: two chunks (ten refs) were acknowledged and recorded.
        let seen = 0;
        receiver.answer = (request) => {
          if (request.path !== '/chunked') return null;
          if (++seen <= 10) return null;
          child.kill('SIGKILL');
          return 'hang';
        };
        await once(child, 'exit');
        receiver.releaseHanging();
        receiver.answer = null;
        const midway = await quiet.app.feeds.status('chunked');
        expect(midway.fullSync).toMatchObject({ requested: true, running: true, progress: { exported: 10 } });
        await quiet.app.feeds.resync('chunked', { wait: true });
        const done = await caughtUp(quiet.app, 'chunked');
        expect(done.fullSync.running).toBe(false);
        const refs = receiver.accepted.map((entry) => entry.event).filter((event) => (event.data as { source?: string }).source === 'chunked').map((event) => event.subject!);
        // 15 refs (main and 14 tags): the first ten once, the rest after the restart.
        expect(new Set(refs).size).toBe(15);
        expect(refs.length).toBe(15);
      } finally {
        receiver.answer = null;
        await quiet.app.close();
        await quietDatabase.drop();
      }
    });

    it('keeps the signing secret out of the database and the logs', async () => {
      const rows = await app.kernel.database.db.selectFrom('feeds').selectAll().execute();
      const text = JSON.stringify(rows) + logs.text;
      expect(text).toContain(secretName);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice(6));
    });
  });
}
