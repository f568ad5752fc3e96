import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { WebhookEventName } from '@octokit/webhooks-types';
import type { InjectOptions } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { signBody } from '../../../src/replication/webhooks/signature.js';
import type { Forgesync } from '../../../src/app/forgesync.js';
import { metricValues } from '../../support/metrics.js';
import { testSecret } from '../../support/secrets.js';

/**
 * A Standard Webhooks secret, `whsec_<base64 of 32 random bytes>`
 * (FORGESYNC_TEST_<NAME> from the environment when set).
 */
export function standardSecret(name?: string): string {
  return (name ? process.env[`FORGESYNC_TEST_${name}`] : undefined) ?? `whsec_${randomBytes(32).toString('base64')}`;
}

/** Secrets of the test receivers. */
export const SECRETS = {
  github: testSecret('GITHUB_WEBHOOK_SECRET'),
  gitlab: testSecret('GITLAB_WEBHOOK_TOKEN'),
  generic: standardSecret('GENERIC_WEBHOOK_SECRET'),
};

/** The settings that enable the three receivers. */
export const WEBHOOK_ENV = {
  FORGESYNC_GITHUB_WEBHOOK_SECRET: SECRETS.github,
  FORGESYNC_GITLAB_WEBHOOK_TOKEN: SECRETS.gitlab,
  FORGESYNC_GENERIC_WEBHOOK_SECRET: SECRETS.generic,
};

interface ExampleGroup {
  name: string;
  examples: Record<string, unknown>[];
}

const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as ExampleGroup[];

/**
 * A real GitHub payload from @octokit/webhooks-examples (the first of
 * `event` whose `action` is `action`, when given), as a fresh copy with
 * every occurrence of each `rewrite` key replaced (e.g. the repository's
 * full name and host, to point it at a test source).
 */
export function githubExample(event: WebhookEventName, action?: string, rewrite: Record<string, string> = {}): Record<string, unknown> {
  const group = examples.find((g) => g.name === event);
  const example = group?.examples.find((e) => action === undefined || e.action === action);
  if (!example) throw new Error(`no @octokit/webhooks-examples payload for ${event}${action ? `.${action}` : ''}`);
  let text = JSON.stringify(example);
  for (const [from, to] of Object.entries(rewrite)) text = text.split(from).join(to);
  return JSON.parse(text) as Record<string, unknown>;
}

/** A signed GitHub delivery of `payload` (JSON unless `form`) for server.inject. */
export function githubDelivery(event: string, payload: unknown, options: { secret?: string; form?: boolean; signature?: string | null } = {}): InjectOptions {
  const json = JSON.stringify(payload);
  const body = options.form ? `payload=${encodeURIComponent(json)}` : json;
  const signature = options.signature === undefined ? signBody(options.secret ?? SECRETS.github, body) : options.signature;
  return {
    method: 'POST',
    url: '/hooks/github',
    headers: {
      'content-type': options.form ? 'application/x-www-form-urlencoded' : 'application/json',
      'x-github-event': event,
      'x-github-delivery': `d-${Math.random().toString(16).slice(2)}`,
      ...(signature !== null ? { 'x-hub-signature-256': signature } : {}),
    },
    payload: body,
  };
}

/** A GitLab delivery of `payload` with the token (none when null). */
export function gitlabDelivery(hook: string, payload: unknown, token: string | null = SECRETS.gitlab): InjectOptions {
  return {
    method: 'POST',
    url: '/hooks/gitlab',
    headers: {
      'content-type': 'application/json',
      'x-gitlab-event': hook,
      ...(token !== null ? { 'x-gitlab-token': token } : {}),
    },
    payload: JSON.stringify(payload),
  };
}

/** How genericDelivery signs; every part can be changed to make a delivery that must be refused. */
export interface GenericDeliveryOptions {
  /** The raw body; default a small JSON object. */
  body?: string | Buffer;
  /** Content type; null: none. Default application/json. */
  contentType?: string | null;
  /** webhook-id; default a fresh `msg_<hex>`. */
  id?: string;
  /** When it is signed (webhook-timestamp); default now. */
  at?: Date;
  /** The secret the standardwebhooks signer uses; default the receiver's. */
  secret?: string;
  /** The whole webhook-signature header instead of the signer's. */
  signature?: string;
  /** Headers to leave out. */
  omit?: ('webhook-id' | 'webhook-timestamp' | 'webhook-signature')[];
}

/** A fresh Standard Webhooks delivery id, `msg_<hex>` like the spec's examples. */
export function deliveryId(): string {
  return `msg_${randomBytes(12).toString('hex')}`;
}

/**
 * A Standard Webhooks delivery for the source `name`, signed by the
 * `standardwebhooks` package (the spec's own library, as a sender uses it).
 */
export function genericDelivery(name: string, options: GenericDeliveryOptions = {}): InjectOptions & { headers: Record<string, string> } {
  const body = options.body ?? '{"ref":"refs/heads/main"}';
  const id = options.id ?? deliveryId();
  const at = options.at ?? new Date();
  const headers: Record<string, string> = {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': options.signature ?? new Webhook(options.secret ?? SECRETS.generic).sign(id, at, body),
  };
  for (const omitted of options.omit ?? []) delete headers[omitted];
  if (options.contentType !== null) headers['content-type'] = options.contentType ?? 'application/json';
  return { method: 'POST', url: `/hooks/generic/${encodeURIComponent(name)}`, headers, payload: body };
}

/** A GitLab project object for `https://<host>/<path>` (the fields GitLab sends in push and system hooks). */
function gitlabProject(host: string, path: string) {
  const name = path.split('/').pop()!;
  return {
    id: 15,
    name,
    description: '',
    web_url: `https://${host}/${path}`,
    avatar_url: null,
    git_ssh_url: `git@${host}:${path}.git`,
    git_http_url: `https://${host}/${path}.git`,
    namespace: path.split('/')[0],
    visibility_level: 0,
    path_with_namespace: path,
    default_branch: 'main',
    homepage: `https://${host}/${path}`,
    url: `git@${host}:${path}.git`,
    ssh_url: `git@${host}:${path}.git`,
    http_url: `https://${host}/${path}.git`,
  };
}

/** A GitLab `Push Hook` (object_kind push) payload, shaped as GitLab documents it. */
export function gitlabPush(host: string, path: string, kind: 'push' | 'tag_push' = 'push') {
  const project = gitlabProject(host, path);
  return {
    object_kind: kind,
    event_name: kind,
    before: '95790bf891e76fee5e1747ab589903a6a1f80f22',
    after: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
    ref: kind === 'push' ? 'refs/heads/main' : 'refs/tags/v1.0.0',
    ref_protected: true,
    checkout_sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
    user_id: 4,
    user_name: 'John Smith',
    user_username: 'jsmith',
    user_email: '',
    user_avatar: 'https://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=8',
    project_id: 15,
    project,
    repository: {
      name: project.name,
      url: project.git_ssh_url,
      description: '',
      homepage: project.web_url,
      git_http_url: project.git_http_url,
      git_ssh_url: project.git_ssh_url,
      visibility_level: 0,
    },
    commits: [
      {
        id: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
        message: 'fixed readme',
        title: 'fixed readme',
        timestamp: '2012-01-03T23:36:29+02:00',
        url: `https://${host}/${path}/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7`,
        author: { name: 'GitLab dev user', email: '[REDACTED]' },
        added: ['CHANGELOG'],
        modified: ['app/controller/application.rb'],
        removed: [],
      },
    ],
    total_commits_count: 1,
  };
}

/** A GitLab system hook `repository_update` payload. */
export function gitlabRepositoryUpdate(host: string, path: string) {
  return {
    event_name: 'repository_update',
    user_id: 1,
    user_name: 'John Smith',
    user_email: 'admin@example.com',
    user_avatar: 'https://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=8',
    project_id: 1,
    project: gitlabProject(host, path),
    changes: [{ before: '8205ea8d81ce0c6b90fbe8280d118cc9fdad6130', after: '4045ea7a3df38697b3730a20fb73c8bed8a3e69e', ref: 'refs/heads/main' }],
    refs: ['refs/heads/main'],
  };
}

/** requested_seq of every source, by name: the registry's record of requests. */
export async function requestCounts(t: { app: Forgesync }): Promise<Record<string, number>> {
  const sources = await t.app.replication.listSources();
  return Object.fromEntries(sources.map((s) => [s.name, s.registry.requestedSeq]));
}

/** `forgesync_webhooks_total` of one provider and result. */
export async function webhookCount(t: { app: Forgesync }, provider: string, result: string): Promise<number> {
  const values = await metricValues(t.app, 'forgesync_webhooks_total');
  return values.find((v) => v.labels.provider === provider && v.labels.result === result)?.value ?? 0;
}
