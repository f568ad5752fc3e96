import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import { gitlabDelivery, gitlabPush, gitlabRepositoryUpdate, requestCounts, SECRETS, WEBHOOK_ENV, webhookCount } from './fixtures.js';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: WEBHOOK_ENV });
  await t.app.replication.addSource({ url: 'https://gitlab.example.com/group/sub/project.git', name: 'project' });
  await t.app.replication.addSource({ url: 'git@gitlab.example.com:ops/infra.git', name: 'infra' });
  await t.app.replication.addSource({ url: 'https://gitlab.example.com/team/app', name: 'app' });
});
afterAll(async () => t?.close());

describe('GitLab webhooks', () => {
  it.each([
    ['Push Hook', gitlabPush('gitlab.example.com', 'group/sub/project'), 'project'],
    ['Tag Push Hook', gitlabPush('gitlab.example.com', 'Ops/Infra', 'tag_push'), 'infra'],
    ['System Hook', gitlabPush('gitlab.example.com', 'team/app'), 'app'],
    ['System Hook', gitlabPush('gitlab.example.com', 'team/app', 'tag_push'), 'app'],
    ['System Hook', gitlabRepositoryUpdate('gitlab.example.com', 'group/sub/project'), 'project'],
  ] as const)('%s (%#) → 202 and a sync request for the matching project', async (hook, payload, name) => {
    const before = await requestCounts(t);
    const response = await t.server.inject(gitlabDelivery(hook, payload));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ result: 'accepted', sources: [name] });
    expect(await requestCounts(t)).toEqual({ ...before, [name]: before[name]! + 1 });
  });

  it('matches by path_with_namespace on the web host when the URLs say nothing', async () => {
    const payload = gitlabPush('gitlab.example.com', 'team/app') as Record<string, any>;
    for (const key of ['git_http_url', 'git_ssh_url', 'http_url', 'ssh_url', 'url']) delete payload.project[key];
    delete payload.repository;
    payload.project.web_url = 'https://gitlab.example.com/renamed/elsewhere';
    expect((await t.server.inject(gitlabDelivery('Push Hook', payload))).json()).toMatchObject({ result: 'accepted', sources: ['app'] });
  });

  it('other hooks and system events → 202 ignored; unknown project → 202 unknown_repository; nothing recorded', async () => {
    const before = await requestCounts(t);
    const mr = await t.server.inject(gitlabDelivery('Merge Request Hook', { object_kind: 'merge_request', project: {} }));
    expect(mr.statusCode).toBe(202);
    expect(mr.json()).toMatchObject({ result: 'ignored' });
    const created = await t.server.inject(gitlabDelivery('System Hook', { event_name: 'project_create', path_with_namespace: 'team/app' }));
    expect(created.json()).toMatchObject({ result: 'ignored' });
    const unknown = await t.server.inject(gitlabDelivery('Push Hook', gitlabPush('gitlab.example.com', 'team/other')));
    expect(unknown.json()).toMatchObject({ result: 'unknown_repository' });
    const otherHost = await t.server.inject(gitlabDelivery('Push Hook', gitlabPush('gitlab.com', 'team/app')));
    expect(otherHost.json()).toMatchObject({ result: 'unknown_repository' });
    expect(await requestCounts(t)).toEqual(before);
  });

  it.each([
    ['missing', null],
    ['wrong', 'not-the-token'],
    ['a prefix of the right one', SECRETS.gitlab.slice(0, -1)],
  ] as const)('%s X-Gitlab-Token → 401, nothing stored touched', async (_label, token) => {
    const before = await t.app.replication.listSources();
    const response = await t.server.inject(gitlabDelivery('Push Hook', gitlabPush('gitlab.example.com', 'team/app'), token));
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ error: 'unauthorized' });
    expect(await t.app.replication.listSources()).toEqual(before);
  });

  it('malformed JSON → 400', async () => {
    const response = await t.server.inject({ ...gitlabDelivery('Push Hook', {}), payload: '{"object_kind": push}' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'invalid_payload' });
  });

  it('counts GitLab deliveries under provider="gitlab"', async () => {
    expect(await webhookCount(t, 'gitlab', 'accepted')).toBe(6);
    expect(await webhookCount(t, 'gitlab', 'unauthorized')).toBe(3);
    expect(await webhookCount(t, 'gitlab', 'invalid')).toBe(1);
    expect(await webhookCount(t, 'gitlab', 'unknown_repository')).toBe(2);
    expect(await webhookCount(t, 'gitlab', 'ignored')).toBe(2);
    expect(t.logs.text).not.toContain(SECRETS.gitlab);
  });
});
