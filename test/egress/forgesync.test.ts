import { createServer } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { InvalidInputError } from '../../src/errors.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { SourceNotFoundError } from '../../src/store/errors.js';
import { syncLeaseKey } from '../../src/replication/sync.js';
import { createTestDatabase, openTestForgesync, refsOf, testConfig, type TestDatabase } from '../support/harness.js';
import { GitHttpServer } from '../support/git-http-server.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { replicationStores } from '../support/stores.js';

// The security review's findings, end to end through Forgesync: what a source
// URL may point at (server-side request forgery), where a redirect may take the
// token, and what the errors say.

const SSRF_URLS = ['https://169.254.169.254/latest/meta-data/', 'https://0x7f000001/', 'https://[::1]/'];
const WAIT = { timeoutMs: 20_000 };

let database: TestDatabase;
/** forgesync as shipped: nothing private allowed. */
let strict: Forgesync;
/** forgesync with loopback opted in (FORGESYNC_ALLOW_NETWORKS=127.0.0.0/8,::1/128), as the test servers need. */
let loopback: Forgesync;
const servers: GitHttpServer[] = [];
const credentials: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase('sqlite');
  ({ app: strict } = await openTestForgesync(testConfig(database.url, { FORGESYNC_ALLOW_NETWORKS: '' })));
  const other = await createTestDatabase('sqlite');
  ({ app: loopback } = await openTestForgesync(testConfig(other.url)));
});
afterAll(async () => {
  await strict?.close();
  await loopback?.close();
});
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const name of credentials.splice(0)) {
    delete process.env[`FORGESYNC_CREDENTIAL_${name}`];
    delete process.env[`FORGESYNC_CREDENTIAL_${name}_HOSTS`];
  }
});

async function serve(options: { token?: string } = {}): Promise<{ server: GitHttpServer; upstream: Upstream; root: string }> {
  const root = mkdtempSync(join(tmpdir(), 'forgesync-egress-'));
  const upstream = Upstream.create(root, 'project.git');
  const server = await GitHttpServer.start({ root, ...options });
  servers.push(server);
  return { server, upstream, root };
}

/** A credential in the environment, bound to `hosts`. */
function credential(name: string, token: string, hosts: string): string {
  process.env[`FORGESYNC_CREDENTIAL_${name.toUpperCase()}`] = token;
  process.env[`FORGESYNC_CREDENTIAL_${name.toUpperCase()}_HOSTS`] = hosts;
  credentials.push(name.toUpperCase());
  return name;
}

/** A port on 127.0.0.1 where nothing listens (it did a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('server-side request forgery', () => {
  it.each(SSRF_URLS)('refuses %s when a source is added or updated, by default', async (url) => {
    const before = (await strict.replication.listSources()).length;
    const error = await strict.replication.addSource({ url, name: `ssrf-${before}` }).then(() => undefined, (e: Error) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error?.message).toMatch(/refusing to connect to .*: it (is|resolves to|carries)/);
    expect(error?.message).toMatch(/allowNetworks \(FORGESYNC_ALLOW_NETWORKS\)/);
    expect((await strict.replication.listSources()).length).toBe(before);

    const fine = await strict.replication.addSource({ url: 'https://github.com/forgesync/fine.git', name: `fine-${before}` });
    await expect(strict.replication.updateSource(fine.name, { url })).rejects.toThrow(/refusing to connect to/);
    expect((await strict.replication.getSource(fine.name)).url).toBe('https://github.com/forgesync/fine.git');
    await strict.replication.removeSource(fine.name);
  });

  it.each(['ssh://git@%31%32%37.0.0.1/x.git', 'git@[::1]:x.git', 'git@10.0.0.8:x.git', 'ssh://git@0xa9fea9fe/x.git'])(
    'refuses the ssh URL %s when it is added, whatever the spelling of the address',
    async (url) => {
      await expect(strict.replication.addSource({ url, name: 'ssh-literal' })).rejects.toThrow(/^refusing to connect to /);
      await expect(strict.replication.getSource('ssh-literal')).rejects.toBeInstanceOf(SourceNotFoundError);
    },
  );

  it('refuses them at sync time too (rows stored before this check existed), and a name resolving to loopback', async () => {
    const rows = [...SSRF_URLS, 'https://localhost/x.git'];
    for (const [index, url] of rows.entries()) {
      // As a row written by an older forgesync: straight into the registry.
      await replicationStores(strict).sources.create({ name: `stored-${index}`, url });
    }
    for (const [index, url] of rows.entries()) {
      const status = await strict.replication.sync(`stored-${index}`, WAIT);
      expect(status.registry.state, url).toBe('failed');
      expect(status.registry.lastFailure, url).toMatch(/^refusing to connect to /);
    }
    expect((await strict.replication.getSource('stored-0')).registry.lastFailure).toMatch(/169\.254\.169\.254: it is in 169\.254\.0\.0\/16/);
    // The URL parser reads 0x7f000001 as the address it spells.
    expect((await strict.replication.getSource('stored-1')).registry.lastFailure).toMatch(/127\.0\.0\.1: it is in 127\.0\.0\.0\/8/);
    expect((await strict.replication.getSource('stored-2')).registry.lastFailure).toMatch(/::1: it is in ::1\/128/);
    expect((await strict.replication.getSource('stored-3')).registry.lastFailure).toMatch(/localhost: it resolves to (127\.0\.0\.1|::1)/);
  });

  it('records the same error for an open and a closed port of a refused address, and sends nothing', async () => {
    const { server } = await serve();
    const closed = await closedPort();
    // Names are accepted when added (their addresses count at connection time).
    const open = await strict.replication.addSource({ url: `http://localhost:${server.port}/project.git`, name: 'port-open' });
    const shut = await strict.replication.addSource({ url: `http://localhost:${closed}/project.git`, name: 'port-closed' });
    await replicationStores(strict).sources.create({ name: 'literal-open', url: `http://127.0.0.1:${server.port}/project.git` });
    await replicationStores(strict).sources.create({ name: 'literal-closed', url: `http://127.0.0.1:${closed}/project.git` });
    const failures = [];
    for (const name of [open.name, shut.name, 'literal-open', 'literal-closed']) {
      const status = await strict.replication.sync(name, WAIT);
      expect(status.registry.state).toBe('failed');
      failures.push(status.registry.lastFailure);
    }
    expect(failures[0]).toMatch(/^refusing to connect to localhost/);
    expect(failures[1]).toBe(failures[0]);
    expect(failures[2]).toMatch(/^refusing to connect to 127\.0\.0\.1: it is in 127\.0\.0\.0\/8/);
    expect(failures[3]).toBe(failures[2]);
    for (const failure of failures) expect(failure).not.toMatch(new RegExp(`${server.port}|${closed}|port`, 'i'));
    expect(server.requests).toEqual([]);
  });

  it('refuses a redirect from an allowed upstream to a refused address, before connecting there', async () => {
    const { server } = await serve();
    server.redirectTo('meta.git', 'http://169.254.169.254', 'latest');
    const meta = await loopback.replication.addSource({ url: server.url('meta.git'), name: 'to-metadata' });
    let status = await loopback.replication.sync(meta.name, WAIT);
    expect(status.registry.state).toBe('failed');
    expect(status.registry.lastFailure).toMatch(/^refusing to connect to 169\.254\.169\.254: it is in 169\.254\.0\.0\/16/);
    server.redirectTo('private.git', 'http://10.1.2.3:8080', 'project.git');
    const hidden = await loopback.replication.addSource({ url: server.url('private.git'), name: 'to-private' });
    status = await loopback.replication.sync(hidden.name, WAIT);
    expect(status.registry.state).toBe('failed');
    expect(status.registry.lastFailure).toMatch(/^refusing to connect to 10\.1\.2\.3: it is in 10\.0\.0\.0\/8/);
    // Only forgesync's own GETs reached the redirector; git never ran against it.
    expect(server.requests.map((request) => request.method)).toEqual(['GET', 'GET']);
  });
});

describe('redirects and the token', () => {
  it('never sends the token to another origin a redirect points at: the sync fails naming both', async () => {
    const token = testSecret('EGRESS_REDIRECT_TOKEN', 'ghp_');
    const { server: b } = await serve(); // serves the repository, asks for nothing
    const { server: a } = await serve();
    a.redirectTo('redir/repo.git', `http://127.0.0.1:${b.port}`, 'project.git');
    const name = credential('egress_a', token, `127.0.0.1:${a.port}`);
    const source = await loopback.replication.addSource({ url: `http://127.0.0.1:${a.port}/redir/repo.git`, name: 'redirected', credentialRef: name });
    const status = await loopback.replication.sync(source.name, WAIT);
    // b never saw the token: not from forgesync's own request, not from git's.
    expect(b.requests.filter((request) => request.headers.authorization !== undefined).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(b.requests).toEqual([]); // not even without it: nothing was sent there
    expect(a.requests.length).toBeGreaterThan(0);
    expect(status.registry.state).toBe('failed');
    expect(status.registry.lastFailure).toBe(
      `http://127.0.0.1:${a.port} redirects to http://127.0.0.1:${b.port}, which the source's credential is not bound to; ` +
        `forgesync sends a credential only to the hosts it is bound to and does not follow this redirect: set the source's URL ` +
        `to the new location, and bind the credential to http://127.0.0.1:${b.port} if it belongs there`,
    );
  });

  it('git itself follows no redirect: one that appears after forgesync resolved the URL fails the sync, the token stays', async () => {
    const token = testSecret('EGRESS_LATE_TOKEN', 'ghp_');
    const { server: b } = await serve();
    const { server: a } = await serve({ token });
    let requests = 0;
    // The first request (forgesync's own GET) is served; every later one (git's) is redirected.
    a.redirectTo('project.git', `http://127.0.0.1:${b.port}`, 'project.git', () => ++requests > 1);
    const name = credential('egress_late', token, `127.0.0.1:${a.port}`);
    const source = await loopback.replication.addSource({ url: a.url('project.git'), name: 'late-redirect', credentialRef: name });
    const status = await loopback.replication.sync(source.name, WAIT);
    expect(b.requests.filter((request) => request.headers.authorization !== undefined).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(b.requests).toEqual([]);
    expect(status.registry.state).toBe('failed');
    expect(status.registry.lastFailure).toMatch(/returned error: 302/);
  });

  it('follows a redirect within one origin, token included, and gives git the rebased URL', async () => {
    const token = testSecret('EGRESS_SAME_TOKEN', 'ghp_');
    const { server, upstream } = await serve({ token });
    server.redirectTo('old.git', `http://127.0.0.1:${server.port}`, 'project.git');
    const name = credential('egress_same', token, `127.0.0.1:${server.port}`);
    const source = await loopback.replication.addSource({ url: server.url('old.git'), name: 'moved-here', credentialRef: name });
    const status = await loopback.replication.sync(source.name, WAIT);
    expect(status.registry.state).toBe('synced');
    expect(refsOf(status.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
    const authorization = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
    expect(server.requests.every((request) => request.headers.authorization === authorization)).toBe(true);
    // forgesync's one GET met the redirect; git went to the new location directly.
    expect(server.requests.filter((request) => request.path.startsWith('/old.git/')).map((request) => request.method)).toEqual(['GET']);
    const posts = server.uploadPackPosts().map((request) => request.path);
    expect(posts.length).toBeGreaterThan(0);
    expect(new Set(posts)).toEqual(new Set(['/project.git/git-upload-pack']));
  });
});

describe("the snapshots' temporary clone", () => {
  /** Opens a snapshot of `name` while its first sync is held elsewhere: the temporary clone serves. */
  async function temporaryClone(app: Forgesync, name: string): Promise<unknown> {
    const source = await app.replication.getSource(name);
    const other = await openLeaseManager(app.config.leaseUrl);
    const lease = await other.acquire(syncLeaseKey(source.id), { ttlMs: 30_000, owner: 'first clone' });
    try {
      return await app.snapshots.open(name, 'main', { waitMs: 200 }).then(
        (snapshot) => (void snapshot.release(), 'opened'),
        (error: Error) => error,
      );
    } finally {
      await lease.release();
      await other.close();
    }
  }

  it('passes the same egress policy as a sync', async () => {
    const { server } = await serve();
    await strict.replication.addSource({ url: `http://localhost:${server.port}/project.git`, name: 'clone-local' });
    const error = await temporaryClone(strict, 'clone-local');
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(/^refusing to connect to localhost: it resolves to/);
    expect(server.requests).toEqual([]);
  });

  it('never takes the token along a redirect to another origin', async () => {
    const token = testSecret('EGRESS_CLONE_TOKEN', 'ghp_');
    const { server: b } = await serve();
    const { server: a } = await serve();
    a.redirectTo('redir/repo.git', `http://127.0.0.1:${b.port}`, 'project.git');
    const name = credential('egress_clone', token, `127.0.0.1:${a.port}`);
    await loopback.replication.addSource({ url: `http://127.0.0.1:${a.port}/redir/repo.git`, name: 'clone-redirected', credentialRef: name });
    const error = await temporaryClone(loopback, 'clone-redirected');
    expect((error as Error).message).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${a.port} redirects to http://127\\.0\\.0\\.1:${b.port}, which the source's credential is not bound to`));
    expect(b.requests).toEqual([]);
  });
});
