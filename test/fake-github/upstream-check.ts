/**
 * What the FakeUpstream tests check deliveries with: a small receiver on
 * 127.0.0.1 (node:http) that keeps each delivery's raw bytes and verifies its
 * signatures, and a comparison of a payload with @octokit/webhooks-examples'
 * payload of the same event and action.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect } from 'vitest';
import { testSecret } from '../support/secrets.js';
import { startFakeGitHub, type FakeGitHub } from './server.js';
import { FakeUpstream } from './upstream.js';
import { api, pages } from './walk.js';
import type { SentDelivery } from './webhook-delivery.js';

export interface Received {
  headers: IncomingHttpHeaders;
  raw: Buffer;
  payload: Record<string, unknown>;
  /** Both `X-Hub-Signature-256` and `X-Hub-Signature` are HMACs of `raw` under the secret. */
  signed: boolean;
}

export interface Receiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

function matches(header: string | string[] | undefined, algorithm: 'sha256' | 'sha1', secret: string, raw: Buffer): boolean {
  if (typeof header !== 'string' || !header.startsWith(`${algorithm}=`)) return false;
  const expected = Buffer.from(`${algorithm}=${createHmac(algorithm, secret).update(raw).digest('hex')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A receiver answering 202 `{"accepted":true}` to every POST. */
export async function startReceiver(secret: string): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const signed = matches(req.headers['x-hub-signature-256'], 'sha256', secret, raw) && matches(req.headers['x-hub-signature'], 'sha1', secret, raw);
      received.push({ headers: req.headers, raw, payload: JSON.parse(raw.toString('utf8')) as Record<string, unknown>, signed });
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/github`,
    received,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

interface ExampleGroup {
  name: string;
  examples: Record<string, unknown>[];
}

const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as ExampleGroup[];

/** The key of each event's main object. */
const MAIN: Record<string, string> = {
  issues: 'issue', issue_comment: 'comment', pull_request: 'pull_request', pull_request_review: 'review', pull_request_review_comment: 'comment',
  pull_request_review_thread: 'thread', label: 'label', milestone: 'milestone', release: 'release', member: 'member', branch_protection_rule: 'rule', repository: 'repository',
};

/** Top-level keys an app installation or an enterprise adds; a repository webhook has none of them. */
const NOT_REQUIRED = new Set(['installation', 'organization', 'enterprise']);

/**
 * What `payload` lacks of @octokit/webhooks-examples' (first) payload of the
 * same event and action: top-level keys, and keys of the main object.
 * Undefined when the package has no such example.
 */
export function exampleGaps(event: string, payload: Record<string, unknown>): { top: string[]; main: string[] } | undefined {
  const example = examples.find((g) => g.name === event)?.examples.find((e) => e.action === payload.action);
  if (!example) return undefined;
  const top = Object.keys(example).filter((key) => !NOT_REQUIRED.has(key) && !(key in payload));
  const mainKey = MAIN[event];
  const theirs = mainKey ? (example[mainKey] as Record<string, unknown> | undefined) : undefined;
  const ours = mainKey ? (payload[mainKey] as Record<string, unknown> | undefined) : undefined;
  // An issue's `pull_request` exists only when it is one (the examples of issues.milestoned are all pull requests).
  const onlyForPulls = (key: string) => mainKey === 'issue' && key === 'pull_request' && ours !== undefined && !('pull_request' in ours);
  const main = theirs ? Object.keys(theirs).filter((key) => (ours === undefined || !(key in ours)) && !onlyForPulls(key)).map((key) => `${mainKey}.${key}`) : [];
  return { top, main };
}

/** Every `event.action` checked against an example so far, and those without one. */
export const compared = new Set<string>();
export const withoutExample = new Set<string>();

/**
 * The deliveries of one mutation: `expected` (`event.action` in order) were
 * answered 202 by the receiver, arrived signed with GitHub's headers, and
 * carry every key of the matching example.
 */
export function expectDelivered(receiver: Receiver, deliveries: SentDelivery[], expected: string[], repoId: number): Record<string, unknown>[] {
  expect(deliveries.map((d) => `${d.event}.${d.action}`)).toEqual(expected);
  return deliveries.map((delivery) => {
    expect(delivery.status).toBe(202);
    expect(delivery.body).toEqual({ accepted: true });
    const arrived = receiver.received.find((r) => r.headers['x-github-delivery'] === delivery.id);
    expect(arrived, `delivery ${delivery.id} reached the receiver`).toBeDefined();
    const { headers, payload, signed } = arrived as Received;
    expect(signed).toBe(true);
    expect(headers).toMatchObject({
      'x-github-event': delivery.event, 'content-type': 'application/json', 'x-github-hook-installation-target-type': 'repository', 'x-github-hook-installation-target-id': String(repoId),
    });
    expect(headers['user-agent']).toMatch(/^GitHub-Hookshot\/[0-9a-f]+$/);
    expect(headers['x-github-hook-id']).toMatch(/^\d+$/);
    expect(headers['x-github-delivery']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(payload.action).toBe(delivery.action);
    expect((payload.repository as { id: number }).id).toBe(repoId);
    expect(payload.sender).toMatchObject({ login: expect.any(String), id: expect.any(Number) });
    const name = `${delivery.event}.${delivery.action}`;
    const gaps = exampleGaps(delivery.event, payload);
    if (gaps === undefined) {
      withoutExample.add(name);
    } else {
      expect(gaps, `${name} lacks keys of @octokit/webhooks-examples' payload`).toEqual({ top: [], main: [] });
      compared.add(name);
    }
    return payload;
  });
}

/** What upstreamFixture() gives a test file: a fake, a receiver and an upstream delivering to it, and the reads the tests make. */
export interface UpstreamFixture {
  readonly secret: string;
  readonly token: string;
  readonly fake: FakeGitHub;
  readonly receiver: Receiver;
  readonly upstream: FakeUpstream;
  /** `<API>/repos/<owner>/<name>`. */
  repoApi(): string;
  /** GET `<repository API><path>` with the token. */
  get(path: string): ReturnType<typeof api>;
  /** Every item of a list under the repository, all pages. */
  all(path: string): Promise<any[]>;
  /** The payloads of `deliveries`, checked (see expectDelivered). */
  delivered(deliveries: SentDelivery[], expected: string[]): Record<string, unknown>[];
}

/** Starts a fake GitHub (no git), a receiver and an upstream before the file's tests, and closes them after. */
export function upstreamFixture(): UpstreamFixture {
  const secret = testSecret('FAKE_UPSTREAM_WEBHOOK_SECRET');
  const token = testSecret('FAKE_UPSTREAM_TOKEN');
  let fake: FakeGitHub | undefined;
  let receiver: Receiver | undefined;
  let upstream: FakeUpstream | undefined;
  beforeAll(async () => {
    receiver = await startReceiver(secret);
    fake = await startFakeGitHub({ tokens: [token], git: false });
    upstream = new FakeUpstream(fake, { url: receiver.url, secret });
  });
  afterAll(async () => {
    await fake?.close();
    await receiver?.close();
  });
  const repoApi = () => `${fake!.apiUrl}/repos/${fake!.project.repo.owner}/${fake!.project.repo.name}`;
  return {
    secret,
    token,
    get fake() {
      return fake!;
    },
    get receiver() {
      return receiver!;
    },
    get upstream() {
      return upstream!;
    },
    repoApi,
    get: (path) => api(`${repoApi()}${path}`, { token }),
    all: async (path) => (await pages(`${repoApi()}${path}`, token)).items,
    delivered: (deliveries, expected) => expectDelivered(receiver!, deliveries, expected, fake!.project.repo.id),
  };
}
