import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Upstream } from '../../support/upstream.js';
import { eventually } from '../../support/harness.js';
import { signBody } from '../../../src/replication/webhooks/signature.js';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import { metricValues } from '../../support/metrics.js';
import { githubDelivery, githubExample, requestCounts, SECRETS, WEBHOOK_ENV, webhookCount } from './fixtures.js';

function webhookLogLines(t: TestServer) {
  return t.logs.lines.filter((line) => line.event === 'webhook');
}

describe('GitHub webhooks', () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer({ env: WEBHOOK_ENV });
    // The examples' repository is Codertocat/Hello-World on github.com: this
    // source spells it differently (case, no .git) and must still match.
    await t.app.replication.addSource({ url: 'https://github.com/codertocat/hello-world', name: 'hello' });
    await t.app.replication.addSource({ url: 'git@github.com:acme/widgets.git', name: 'widgets' });
    await t.app.replication.addSource({ url: 'https://ghe.example.com/platform/tools.git', name: 'tools' });
    await t.app.replication.addSource({ url: 'https://github.com/octocoders/old-name.git', name: 'renamed' });
    await t.app.replication.addSource({ url: 'https://github.com/octocat/Hello-World', name: 'transferred' });
    await t.app.replication.addSource({ url: 'https://github.com/acme/switched.git', name: 'switched' });
    await t.app.replication.addSource({ url: 'https://github.com/acme/dormant.git', name: 'dormant' });
    await t.app.replication.updateSource('dormant', { enabled: false });
  });
  afterAll(async () => t?.close());

  it.each(['push', 'create', 'delete'] as const)('%s (real payload) → 202 and one sync request for the matching source', async (event) => {
    const before = await requestCounts(t);
    const response = await t.server.inject(githubDelivery(event, githubExample(event)));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ result: 'accepted', sources: ['hello'] });
    const after = await requestCounts(t);
    expect(after).toEqual({ ...before, hello: before.hello! + 1 });
  });

  it('matches by ssh URL, full name and GitHub Enterprise hosts, and accepts form-encoded deliveries', async () => {
    const before = await requestCounts(t);
    const widgets = githubExample('push', undefined, { 'Codertocat/Hello-World': 'acme/widgets' });
    const form = await t.server.inject(githubDelivery('push', widgets, { form: true }));
    expect(form.statusCode).toBe(202);
    expect(form.json().sources).toEqual(['widgets']);

    const ghe = githubExample('push', undefined, { 'Codertocat/Hello-World': 'Platform/Tools', 'github.com': 'ghe.example.com' });
    const response = await t.server.inject(githubDelivery('push', ghe));
    expect(response.json().sources).toEqual(['tools']);

    // Only the full name and html_url left: still found.
    const repository = ghe.repository as Record<string, unknown>;
    for (const key of ['clone_url', 'ssh_url', 'git_url', 'svn_url', 'url']) delete repository[key];
    expect((await t.server.inject(githubDelivery('push', ghe))).json().sources).toEqual(['tools']);
    const after = await requestCounts(t);
    expect(after).toEqual({ ...before, widgets: before.widgets! + 1, tools: before.tools! + 2 });
  });

  it('ping → 200, nothing recorded', async () => {
    const before = await requestCounts(t);
    const response = await t.server.inject(githubDelivery('ping', githubExample('ping')));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ result: 'pong' });
    expect(await requestCounts(t)).toEqual(before);
  });

  it('an event forgesync does not act on → 202 ignored; project data of a repository no import follows → 202 unknown_repository; nothing recorded', async () => {
    const before = await requestCounts(t);
    const starred = await t.server.inject(githubDelivery('star', githubExample('star', 'created')));
    expect(starred.statusCode).toBe(202);
    expect(starred.json()).toMatchObject({ result: 'ignored' });
    const response = await t.server.inject(githubDelivery('issues', githubExample('issues', 'opened')));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ result: 'unknown_repository', reason: 'no import follows this repository' });
    const publicized = await t.server.inject(githubDelivery('repository', githubExample('repository', 'publicized')));
    expect(publicized.json()).toMatchObject({ result: 'unknown_repository' });
    expect(await requestCounts(t)).toEqual(before);
  });

  it('an unknown repository → 202 unknown_repository, requestedSeq unchanged everywhere', async () => {
    const before = await requestCounts(t);
    const unknown = githubExample('push', undefined, { 'Codertocat/Hello-World': 'nobody/nothing' });
    const response = await t.server.inject(githubDelivery('push', unknown));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ result: 'unknown_repository' });
    expect(await requestCounts(t)).toEqual(before);
  });

  it('a disabled source is not asked to sync (202 ignored)', async () => {
    const before = await requestCounts(t);
    const dormant = githubExample('push', undefined, { 'Codertocat/Hello-World': 'acme/dormant' });
    const response = await t.server.inject(githubDelivery('push', dormant));
    expect(response.json()).toMatchObject({ result: 'ignored', reason: 'the matching source is disabled' });
    expect(await requestCounts(t)).toEqual(before);
  });

  it('repository renamed: matched by the old name, sync requested, warning logged', async () => {
    const before = await requestCounts(t);
    const payload = githubExample('repository', 'renamed', { 'Octocoders/Hello-World': 'Octocoders/new-name' });
    (payload.changes as { repository: { name: { from: string } } }).repository.name.from = 'old-name';
    const response = await t.server.inject(githubDelivery('repository', payload));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ result: 'accepted', sources: ['renamed'] });
    expect(response.json().reason).toMatch(/renamed from Octocoders\/old-name to Octocoders\/new-name/);
    expect(await requestCounts(t)).toEqual({ ...before, renamed: before.renamed! + 1 });
    const line = webhookLogLines(t).at(-1)!;
    expect(line).toMatchObject({ level: 40, hook_event: 'repository.renamed', result: 'accepted', sources: ['renamed'] });
  });

  it('repository transferred (real payload): matched by the previous owner', async () => {
    const before = await requestCounts(t);
    const response = await t.server.inject(githubDelivery('repository', githubExample('repository', 'transferred')));
    expect(response.json()).toMatchObject({ result: 'accepted', sources: ['transferred'] });
    expect(await requestCounts(t)).toEqual({ ...before, transferred: before.transferred! + 1 });
  });

  it('repository edited: a new default branch requests a sync, a new description does not', async () => {
    const before = await requestCounts(t);
    const edited = githubExample('repository', 'edited', { 'Octocoders/Hello-World': 'acme/switched' });
    edited.changes = { default_branch: { from: 'master' } };
    expect((await t.server.inject(githubDelivery('repository', edited))).json()).toMatchObject({ result: 'accepted', sources: ['switched'] });
    // For the mirror nothing changed; the imports of the repository (none here) would read it again.
    edited.changes = { description: { from: 'old' } };
    expect((await t.server.inject(githubDelivery('repository', edited))).json()).toMatchObject({ result: 'unknown_repository' });
    expect(await requestCounts(t)).toEqual({ ...before, switched: before.switched! + 1 });
  });

  describe('refusals touch nothing stored', () => {
    const push = () => githubExample('push');

    it.each([
      ['missing', null],
      ['wrong secret', 'sha256=' + '0'.repeat(64)],
      ['sha1 scheme', 'sha1=0123456789abcdef0123456789abcdef01234567'],
      ['garbage', 'not a signature'],
    ] as const)('%s signature → 401', async (_label, signature) => {
      const before = await t.app.replication.listSources();
      const response = await t.server.inject(githubDelivery('push', push(), { signature }));
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ error: 'unauthorized' });
      expect(await t.app.replication.listSources()).toEqual(before);
    });

    it('signed with another secret → 401', async () => {
      const before = await t.app.replication.listSources();
      const response = await t.server.inject(githubDelivery('push', push(), { secret: 'not-the-secret' }));
      expect(response.statusCode).toBe(401);
      expect(response.json().message).toMatch(/signature does not match/);
      expect(await t.app.replication.listSources()).toEqual(before);
    });

    it('a valid signature over a modified body → 401', async () => {
      const delivery = githubDelivery('push', push());
      const tampered = { ...delivery, payload: String(delivery.payload).replace('Codertocat', 'Codertocaz') };
      expect((await t.server.inject(tampered)).statusCode).toBe(401);
    });

    it('malformed JSON (correctly signed) → 400', async () => {
      const before = await t.app.replication.listSources();
      const body = '{"ref": "refs/heads/main", ';
      const delivery = githubDelivery('push', null, { signature: null });
      const response = await t.server.inject({
        ...delivery,
        payload: body,
        headers: { ...delivery.headers, 'x-hub-signature-256': signBody(SECRETS.github, body) },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: 'invalid_payload' });
      expect(response.json().message).toMatch(/not valid JSON/);
      expect(await t.app.replication.listSources()).toEqual(before);
    });

    it('a JSON array, or a missing X-GitHub-Event → 400', async () => {
      expect((await t.server.inject(githubDelivery('push', [1, 2]))).statusCode).toBe(400);
      const delivery = githubDelivery('push', push());
      const headers = { ...delivery.headers } as Record<string, string>;
      delete headers['x-github-event'];
      const response = await t.server.inject({ ...delivery, headers });
      expect(response.statusCode).toBe(400);
      expect(response.json().message).toMatch(/X-GitHub-Event/);
    });

    it('a body over the 1 MiB limit → 413, even when signed', async () => {
      const before = await t.app.replication.listSources();
      const big = { ...push(), padding: 'x'.repeat(1024 * 1024) };
      const response = await t.server.inject(githubDelivery('push', big));
      expect(response.statusCode).toBe(413);
      expect(response.json()).toMatchObject({ error: 'payload_too_large' });
      expect(await t.app.replication.listSources()).toEqual(before);
    });
  });

  it('counts every delivery by provider and result and logs one line each, without secrets or payload', async () => {
    const lines = webhookLogLines(t);
    const responses = lines.length;
    expect(await webhookCount(t, 'github', 'accepted')).toBe(lines.filter((l) => l.result === 'accepted').length);
    expect(await webhookCount(t, 'github', 'unauthorized')).toBe(6);
    expect(await webhookCount(t, 'github', 'invalid')).toBe(4);
    // One push for an unknown repository; an issue, a repository publicized and one edited, which no import follows.
    expect(await webhookCount(t, 'github', 'unknown_repository')).toBe(4);
    expect(await webhookCount(t, 'github', 'ignored')).toBe(lines.filter((l) => l.result === 'ignored').length);
    const total = (await metricValues(t.app, 'forgesync_webhooks_total')).reduce((sum, v) => sum + v.value, 0);
    expect(total).toBe(responses);
    for (const line of lines) {
      expect(line).toMatchObject({ provider: 'github' });
      expect(typeof line.delivery).toBe('string');
    }
    expect(t.logs.text).not.toContain(SECRETS.github);
    expect(t.logs.text).not.toContain('head_commit');
    expect(t.logs.text).not.toContain('Adding a .gitignore file');
  });
});

describe('an unconfigured receiver', () => {
  it('answers 404 naming the setting, and never accepts an unsigned delivery', async () => {
    const t = await startTestServer();
    try {
      await t.app.replication.addSource({ url: 'https://github.com/Codertocat/Hello-World.git', name: 'hello' });
      const before = await t.app.replication.listSources();
      for (const signature of [null, undefined]) {
        const response = await t.server.inject(githubDelivery('push', githubExample('push'), { signature }));
        expect(response.statusCode).toBe(404);
        expect(response.json()).toMatchObject({ error: 'webhook_not_configured' });
        expect(response.json().message).toMatch(/FORGESYNC_GITHUB_WEBHOOK_SECRET/);
      }
      const gitlab = await t.server.inject({ method: 'POST', url: '/hooks/gitlab', payload: {} });
      expect(gitlab.statusCode).toBe(404);
      expect(gitlab.json().message).toMatch(/FORGESYNC_GITLAB_WEBHOOK_TOKEN/);
      const generic = await t.server.inject({ method: 'POST', url: '/hooks/generic/hello', payload: {} });
      expect(generic.json().message).toMatch(/FORGESYNC_GENERIC_WEBHOOK_SECRET/);
      expect(await t.app.replication.listSources()).toEqual(before);
    } finally {
      await t.close();
    }
  });
});

describe('repository deleted upstream', () => {
  it('requests a sync that marks the row missing_on_primary and keeps the mirror', async () => {
    const t = await startTestServer({ env: WEBHOOK_ENV, service: true });
    const upstream = Upstream.create();
    try {
      await t.app.replication.addSource({ url: upstream.bare, name: 'doomed' });
      const synced = await eventually('first sync', async () => {
        const s = await t.app.replication.getSource('doomed');
        return s.registry.state === 'synced' ? s : null;
      });
      rmSync(upstream.bare, { recursive: true, force: true });
      // GitHub's payload, pointed at the local upstream (a file:// clone URL).
      const payload = githubExample('repository', 'renamed');
      payload.action = 'deleted';
      delete payload.changes;
      payload.repository = { ...(payload.repository as object), clone_url: `file://${upstream.bare}` };
      const response = await t.server.inject(githubDelivery('repository', payload));
      expect(response.statusCode).toBe(202);
      expect(response.json()).toMatchObject({ result: 'accepted', sources: ['doomed'] });
      const gone = await eventually('missing_on_primary', async () => {
        const s = await t.app.replication.getSource('doomed');
        return s.registry.missingOnPrimary ? s : null;
      });
      expect(gone.registry.state).toBe('failed');
      expect(gone.registry.mirrorPath).toBe(synced.registry.mirrorPath);
      expect(gone.registry.checksum).toBe(synced.registry.checksum);
    } finally {
      await t.close();
    }
  });
});

describe('over real HTTP', () => {
  it('accepts a signed delivery and refuses a 2 MiB body with 413 before handling it', async () => {
    const t = await startTestServer({ env: WEBHOOK_ENV, listen: true });
    try {
      await t.app.replication.addSource({ url: 'https://github.com/Codertocat/Hello-World.git', name: 'hello' });
      const body = JSON.stringify(githubExample('push'));
      const headers = { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signBody(SECRETS.github, body) };
      const ok = await fetch(`${t.url}/hooks/github`, { method: 'POST', headers, body });
      expect(ok.status).toBe(202);
      expect(await ok.json()).toEqual({ result: 'accepted', sources: ['hello'] });

      const before = await t.app.replication.listSources();
      const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
      const tooBig = await fetch(`${t.url}/hooks/github`, {
        method: 'POST',
        headers: { ...headers, 'x-hub-signature-256': signBody(SECRETS.github, big) },
        body: big,
      });
      expect(tooBig.status).toBe(413);
      expect(await tooBig.json()).toMatchObject({ error: 'payload_too_large' });
      expect(await t.app.replication.listSources()).toEqual(before);
      expect(t.logs.lines.filter((l) => l.event === 'webhook').map((l) => l.result)).toEqual(['accepted', 'invalid']);
    } finally {
      await t.close();
    }
  });
});
