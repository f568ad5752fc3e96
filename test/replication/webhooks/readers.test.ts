import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openReaders, ReaderThreadStoppedError, ThreadedReaders, type DeliveryReaders } from '../../../src/replication/webhooks/readers.js';
import type { DeliveryJob } from '../../../src/replication/webhooks/read.js';
import { signBody } from '../../../src/replication/webhooks/signature.js';
import { githubExample, SECRETS } from './fixtures.js';

// The thread runs compiled code: the script npm test builds into dist/.
const SCRIPT = new URL('../../../dist/replication/webhooks/reader.worker.js', import.meta.url);

function githubJob(event: string, payload: unknown, options: { signature?: string; form?: boolean } = {}): DeliveryJob {
  const json = JSON.stringify(payload);
  const body = Buffer.from(options.form ? `payload=${encodeURIComponent(json)}` : json);
  return {
    provider: 'github',
    body,
    event,
    signature: options.signature ?? signBody(SECRETS.github, body),
    contentType: options.form ? 'application/x-www-form-urlencoded' : 'application/json',
  };
}

const push = githubExample('push', undefined, { 'Codertocat/Hello-World': 'acme/widgets' });
const renamed = githubExample('repository', 'renamed', { 'Codertocat/Hello-World': 'acme/gadgets' });
const JOBS: Record<string, DeliveryJob> = {
  push: githubJob('push', push),
  'push, form-encoded': githubJob('push', push, { form: true }),
  ping: githubJob('ping', { zen: 'Keep it logically awesome.' }),
  'repository renamed': githubJob('repository', renamed),
  'bad signature': githubJob('push', push, { signature: signBody('another secret', '{}') }),
  'no event header': { ...githubJob('push', push), event: undefined },
  'not JSON': { provider: 'github', body: Buffer.from('{"repository":'), event: 'push', signature: signBody(SECRETS.github, '{"repository":'), contentType: 'application/json' },
  'gitlab push': { provider: 'gitlab', body: Buffer.from(JSON.stringify({ project: { git_http_url: 'https://gitlab.example/acme/widgets.git', path_with_namespace: 'acme/widgets', web_url: 'https://gitlab.example/acme/widgets' } })), event: 'Push Hook', contentType: 'application/json' },
};

describe('webhook reader threads', () => {
  let readers: DeliveryReaders[] = [];
  beforeAll(() => {
    if (!existsSync(fileURLToPath(SCRIPT))) throw new Error(`the reader thread runs dist/: run \`npm run build\` first (${fileURLToPath(SCRIPT)} is missing)`);
  });
  const open = (threads: number) => {
    const opened = openReaders({ github: SECRETS.github }, threads, SCRIPT);
    readers.push(opened);
    return opened;
  };
  afterEach(async () => {
    await Promise.all(readers.map((r) => r.close()));
    readers = [];
  });

  it('reads on threads when there are any, on the event loop otherwise, or without the compiled script', () => {
    expect(open(2)).toBeInstanceOf(ThreadedReaders);
    expect(open(0)).not.toBeInstanceOf(ThreadedReaders);
    const missing = openReaders({ github: SECRETS.github }, 2, new URL('../../server/no-such-reader.worker.js', import.meta.url));
    expect(missing).not.toBeInstanceOf(ThreadedReaders);
  });

  it('reads every kind of delivery on a thread exactly as on the event loop, concurrent ones together', async () => {
    const inline = open(0);
    const threaded = open(2);
    const names = Object.keys(JOBS);
    // Several turns' worth, so both threads get batches.
    const jobs = Array.from({ length: 5 }, () => names).flat();
    const [onThreads, onLoop] = await Promise.all([Promise.all(jobs.map((name) => threaded.read(JOBS[name]!))), Promise.all(jobs.map((name) => inline.read(JOBS[name]!)))]);
    expect(onThreads).toEqual(onLoop);
    const byName = Object.fromEntries(names.map((name, i) => [name, onLoop[i]]));
    expect(byName.push).toMatchObject({ request: { event: 'push', keys: expect.arrayContaining(['github.com/acme/widgets']) } });
    expect(byName['push, form-encoded']).toEqual(byName.push);
    expect(byName.ping).toMatchObject({ answer: { status: 200, body: { result: 'pong', zen: 'Keep it logically awesome.' } } });
    expect(byName['repository renamed']).toMatchObject({ request: { event: 'repository.renamed', warnWhenAccepted: true } });
    expect(byName['bad signature']).toMatchObject({ answer: { status: 401, result: 'unauthorized' } });
    expect(byName['no event header']).toMatchObject({ answer: { status: 400, body: { message: 'missing X-GitHub-Event header' } } });
    expect(byName['not JSON']).toMatchObject({ answer: { status: 400, body: { error: 'invalid_payload', message: expect.stringContaining('not valid JSON') } } });
    expect(byName['gitlab push']).toMatchObject({ request: { event: 'Push Hook', keys: expect.arrayContaining(['gitlab.example/acme/widgets']) } });
  });

  it('keeps the caller’s body intact: each job sends a copy', async () => {
    const job = JOBS.push!;
    const before = Buffer.from(job.body);
    await open(1).read(job);
    expect(Buffer.from(job.body).equals(before)).toBe(true);
  });

  it('leaves the event loop free while a large delivery is read', async () => {
    // A push with 20,000 commits (about 10 MB): read on the event loop, it resolves before
    // anything scheduled meanwhile runs; on a thread, the loop goes on first.
    const big = { ...push, commits: Array.from({ length: 20_000 }, (_, i) => ({ id: `${i}`.padStart(40, '0'), message: 'x'.repeat(400) })) };
    for (const [threads, loopFirst] of [[0, false], [1, true]] as const) {
      const readers = open(threads);
      const order: string[] = [];
      const read = readers.read(githubJob('push', big)).then(() => order.push('read'));
      setImmediate(() => order.push('loop'));
      await read;
      await new Promise((resolve) => setImmediate(resolve));
      expect(order[0]).toBe(loopFirst ? 'loop' : 'read');
    }
  });

  it('fails the deliveries of a thread that dies with an error saying the forge redelivers, and reads the next ones on a new thread', async () => {
    const threaded = new ThreadedReaders({ github: SECRETS.github }, 1, new URL('./fixtures/crashing-reader.worker.mjs', import.meta.url));
    readers.push(threaded);
    await expect(threaded.read(JOBS.push!)).resolves.toMatchObject({ request: { event: 'push' } });
    const error = await threaded.read({ ...JOBS.push!, event: 'crash' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReaderThreadStoppedError);
    expect((error as Error).message).toMatch(/exit code 3.*the forge redelivers it/);
    await expect(threaded.read(JOBS.push!)).resolves.toMatchObject({ request: { event: 'push' } });
  });

  it('after close, refuses reads with the same error', async () => {
    const threaded = open(1);
    await threaded.read(JOBS.ping!);
    await threaded.close();
    await expect(threaded.read(JOBS.ping!)).rejects.toBeInstanceOf(ReaderThreadStoppedError);
  });
});
