import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { DiscardPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../../src/egress/policy.js';
import type { CloudEvent } from '../../../src/feeds/events.js';
import { UnsupportedSinkUrlError } from '../../../src/feeds/sinks/errors.js';
import { openSink } from '../../../src/feeds/sinks/open.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from '../../../src/feeds/sinks/types.js';
import { describeSinkConformance, makeEvents, type ReceivedEvent } from './conformance.js';
import { freePort } from '../../support/free-port.js';

const NATS = process.env.FORGESYNC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const NATS_SERVER = process.env.FORGESYNC_TEST_NATS_SERVER ?? '/usr/sbin/nats-server';
const START_HINT = 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log';
const policy = new EgressPolicy({ allowNetworks: ['127.0.0.1/32'] });
const never = (): AbortSignal => new AbortController().signal;
const unique = randomUUID().replace(/-/g, '');
const stream = `forgesync_test_${unique}`;
const subject = `forgesync.test.${unique}`;

let nc: NatsConnection;
let jsm: JetStreamManager;
/** The `Nats-Msg-Id` of every message read back, by sequence. */
let msgIds: (string | undefined)[] = [];

beforeAll(async () => {
  const { host } = new URL(NATS);
  try {
    nc = await connect({ servers: host, timeout: 5000 });
    jsm = await jetstreamManager(nc);
  } catch (error) {
    throw new Error(`NATS with JetStream at ${NATS} is not reachable (${(error as Error).message}); start it with: ${START_HINT}`);
  }
  await jsm.streams.add({ name: stream, subjects: [subject] });
});
afterAll(async () => {
  await jsm?.streams.delete(stream).catch(() => undefined);
  await nc?.close();
});

const opened: FeedSink[] = [];
async function open(options: Partial<SinkOptions> = {}, url = `${NATS}/${subject}`): Promise<FeedSink> {
  const sink = await openSink(url, { batch: 1, timeoutMs: 5000, policy, ...options });
  opened.push(sink);
  return sink;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sink) => sink.close()));
});

/** Every message of the test's stream, in stream order, read with an ordered consumer. */
async function readStream(): Promise<ReceivedEvent[]> {
  const count = (await jsm.streams.info(stream)).state.messages;
  const got: ReceivedEvent[] = [];
  msgIds = [];
  if (count === 0) return got;
  const consumer = await jetstream(nc).consumers.get(stream);
  const messages = await consumer.fetch({ max_messages: count, expires: 5000 });
  for await (const message of messages) {
    got.push({ event: message.json<CloudEvent>(), raw: message.string() });
    msgIds.push(message.headers?.get('Nats-Msg-Id'));
    if (got.length === count) break;
  }
  expect(got).toHaveLength(count);
  return got;
}

/** Points the test's stream at `taken` (it keeps what it holds). */
async function setStreamSubject(taken: string): Promise<void> {
  const info = await jsm.streams.info(stream);
  if (info.config.subjects?.[0] !== taken) await jsm.streams.update(stream, { ...info.config, subjects: [taken] });
}
let silent: Subscription | undefined;

describeSinkConformance('nats', {
  open: (options) => open(options),
  received: readStream,
  // Moving the stream off the subject leaves publishes to it unanswered, and keeps what it holds.
  setFailing: (failing) => setStreamSubject(failing ? `${subject}.parked` : subject),
  // A core subscriber on the subject (the stream moved off it) takes the publishes and never acks them.
  setStalled: async (stalled) => {
    await setStreamSubject(stalled ? `${subject}.parked` : subject);
    if (stalled) silent ??= nc.subscribe(subject);
    else {
      silent?.unsubscribe();
      silent = undefined;
    }
    await nc.flush();
  },
  batches: [1, 5],
});

const failure = (outcome: DeliveryOutcome | undefined) => {
  expect(outcome?.ok).toBe(false);
  return outcome as Extract<DeliveryOutcome, { ok: false }>;
};


describe('nats sink', () => {
  it('sets Nats-Msg-Id to the event id, and a redelivery is dropped by the stream yet acknowledged', async () => {
    const sink = await open();
    const events = makeEvents(4);
    expect((await sink.deliver(events, never())).every((outcome) => outcome.ok)).toBe(true);
    const before = (await jsm.streams.info(stream)).state.messages;
    expect(await sink.deliver([events[1]!, events[2]!], never())).toEqual([{ ok: true }, { ok: true }]);
    expect((await jsm.streams.info(stream)).state.messages).toBe(before);
    const got = await readStream();
    for (const entry of events) {
      const at = got.findIndex((candidate) => candidate.event.id === entry.event.id);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(msgIds[at]).toBe(entry.event.id);
      expect(got.filter((candidate) => candidate.event.id === entry.event.id)).toHaveLength(1);
    }
  });

  it('says to create a stream when none covers the subject, and creates none', async () => {
    const uncovered = `forgesync.nostream.${randomUUID().replace(/-/g, '')}`;
    const sink = await open({}, `${NATS}/${uncovered}`);
    const outcome = failure((await sink.deliver(makeEvents(2), never()))[1]);
    expect(outcome.error).toBe(
      `no JetStream stream covers the subject "${uncovered}" at NATS 127.0.0.1:4222: create one (e.g. \`nats stream add <name> --subjects '${uncovered}'\`); ` +
        'forgesync does not create streams, their retention and limits are yours to choose',
    );
    await expect(jsm.streams.find(uncovered)).rejects.toThrow();
  });

  it('fails clearly when nothing listens, and sends nothing to an address the policy refuses', async () => {
    const port = await freePort();
    const down = failure((await (await open({ timeoutMs: 2000 }, `nats://127.0.0.1:${port}/${subject}`)).deliver(makeEvents(1), never()))[0]);
    expect(down.error).toMatch(new RegExp(`^cannot connect to NATS at 127\\.0\\.0\\.1:${port}: connection refused`));
    const refusing = await openSink(`${NATS}/${subject}`, { batch: 1, timeoutMs: 2000, policy: new EgressPolicy() });
    opened.push(refusing);
    const before = (await jsm.streams.info(stream)).state.messages;
    expect(failure((await refusing.deliver(makeEvents(1), never()))[0]).error).toMatch(/refusing to connect to 127\.0\.0\.1: .*allowNetworks/);
    expect((await jsm.streams.info(stream)).state.messages).toBe(before);
  });

  it('fails the publishes left unacknowledged after the timeout, and takes the next delivery normally', async () => {
    const sink = await open({ timeoutMs: 400 });
    await setStreamSubject(`${subject}.parked`);
    const listener = nc.subscribe(subject);
    try {
      await nc.flush();
      const started = Date.now();
      const outcomes = await sink.deliver(makeEvents(3), never());
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);
      for (const outcome of outcomes) expect(failure(outcome).error).toBe(`NATS at 127.0.0.1:4222 did not acknowledge the publish to "${subject}" within 400 ms`);
    } finally {
      listener.unsubscribe();
      await setStreamSubject(subject);
    }
    expect(await sink.deliver(makeEvents(2), never())).toEqual([{ ok: true }, { ok: true }]);
  });

  it("reports the stream's refusal of a publish with JetStream's own words and code", async () => {
    const full = `forgesync_full_${unique}`;
    const fullSubject = `forgesync.full.${unique}`;
    await jsm.streams.add({ name: full, subjects: [fullSubject], max_msgs: 1, discard: DiscardPolicy.New });
    try {
      const sink = await open({}, `${NATS}/${fullSubject}`);
      const [first, second] = await sink.deliver(makeEvents(2), never());
      expect(first).toEqual({ ok: true });
      expect(failure(second).error).toMatch(new RegExp(`^JetStream refused the publish to "${fullSubject.replace(/\./g, '\\.')}": maximum messages exceeded \\(error 10077\\)$`));
    } finally {
      await jsm.streams.delete(full);
    }
  });

  it('refuses subjects with wildcards or spaces, and URLs carrying a token', async () => {
    for (const url of [`${NATS}/a.*`, `${NATS}/a.>`, `${NATS}/a%20b`, `${NATS}/`, `${NATS}/a..b`, 'nats://tok@127.0.0.1:4222/a']) {
      await expect(openSink(url, { batch: 1, timeoutMs: 1000, policy })).rejects.toBeInstanceOf(UnsupportedSinkUrlError);
    }
  });

  describe('with a server that wants a token and has no JetStream', () => {
    const token = randomBytes(18).toString('hex');
    let server: ChildProcess;
    let url: string;
    beforeAll(async () => {
      const port = await freePort();
      url = `nats://127.0.0.1:${port}/${subject}`;
      server = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '--auth', token], { stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      server.stderr!.on('data', (chunk: Buffer) => void (log += chunk.toString()));
      const ready = new Promise<void>((resolve, reject) => {
        server.stderr!.on('data', () => log.includes('Server is ready') && resolve());
        server.once('error', (error) => reject(new Error(`cannot start ${NATS_SERVER} (${error.message}); install nats-server or set FORGESYNC_TEST_NATS_SERVER`)));
        server.once('exit', (code) => reject(new Error(`${NATS_SERVER} exited with ${code}: ${log}`)));
      });
      await ready;
    });
    afterAll(async () => {
      if (server?.exitCode === null) {
        server.kill('SIGTERM');
        await once(server, 'exit');
      }
    });

    it('without the token: an authorization failure pointing at --secret (a feed secret)', async () => {
      const outcome = failure((await (await open({ timeoutMs: 3000 }, url)).deliver(makeEvents(1), never()))[0]);
      expect(outcome.error).toMatch(/^cannot connect to NATS at 127\.0\.0\.1:\d+: .*[Aa]uthorization.*feed secret.*--secret\)/);
    });

    it('with the token: connected, then told JetStream is not enabled', async () => {
      const outcome = failure((await (await open({ timeoutMs: 3000, secret: token }, url)).deliver(makeEvents(2), never()))[0]);
      expect(outcome.error).toMatch(/^JetStream is not enabled on the NATS server at 127\.0\.0\.1:\d+ .*start nats-server with -js/);
      expect(outcome.error).not.toContain(token);
    });
  });
});
