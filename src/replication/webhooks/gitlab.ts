import { fullNameKey, matchKey } from '../../util/match-key.js';
import { objectAt, stringAt, type Payload } from './body.js';
import type { DeliveryIntent } from './delivery.js';

/** Project hooks that mean "refs changed". */
const REF_HOOKS = new Set(['Push Hook', 'Tag Push Hook']);
/** System hook events (`event_name`) that mean "refs changed". */
const REF_SYSTEM_EVENTS = new Set(['push', 'tag_push', 'repository_update']);

/**
 * What one authenticated GitLab delivery asks for (pure): `Push Hook` and
 * `Tag Push Hook`, and `System Hook` deliveries whose `event_name` is
 * `push`, `tag_push` or `repository_update`, request a sync of the sources
 * matching the project (`git_http_url`, `git_ssh_url`, `web_url`,
 * `path_with_namespace`); any other hook is answered 202 ignored.
 */
export function readGitLab(hook: string, payload: Payload): DeliveryIntent {
  if (hook === 'System Hook') {
    const name = stringAt(payload, 'event_name') ?? stringAt(payload, 'object_kind') ?? '?';
    const event = `System Hook ${name}`;
    if (!REF_SYSTEM_EVENTS.has(name)) return { answer: { status: 202, result: 'ignored', event, reason: `forgesync does not act on system hook "${name}"` } };
    return { request: { event, keys: projectKeys(payload) } };
  }
  if (!REF_HOOKS.has(hook)) return { answer: { status: 202, result: 'ignored', event: hook, reason: `forgesync does not act on "${hook}"` } };
  return { request: { event: hook, keys: projectKeys(payload) } };
}

/** Every key the project (and repository) object of a GitLab payload can match by. */
export function projectKeys(payload: Payload): (string | null)[] {
  const project = objectAt(payload, 'project');
  const repository = objectAt(payload, 'repository');
  const webUrl = stringAt(project, 'web_url') ?? stringAt(repository, 'homepage');
  let host: string | undefined;
  try {
    host = webUrl ? new URL(webUrl).hostname.toLowerCase() : undefined;
  } catch {
    host = undefined;
  }
  const urls = [
    stringAt(project, 'git_http_url'),
    stringAt(project, 'git_ssh_url'),
    stringAt(project, 'web_url'),
    stringAt(project, 'http_url'),
    stringAt(project, 'ssh_url'),
    stringAt(repository, 'git_http_url'),
    stringAt(repository, 'git_ssh_url'),
    stringAt(repository, 'homepage'),
  ];
  return [...urls.map(matchKey), fullNameKey(host, stringAt(project, 'path_with_namespace'))];
}
