import { fullNameKey, matchKey, matchKeyHost } from '../../util/match-key.js';
import { objectAt, stringAt, type Payload } from './body.js';
import type { DeliveryIntent, DeliveryOutcome, SyncRequestIntent } from './delivery.js';
import { readProjectDelivery } from './github-project.js';

/** Events whose only meaning for a mirror is "refs changed". */
const REF_EVENTS = new Set(['push', 'create', 'delete']);

/**
 * What one verified GitHub delivery asks for (payload shapes of
 * `@octokit/webhooks-types`); pure, so it can run off the event loop:
 * - `push`, `create`, `delete` → a sync request for the matching sources.
 * - `repository` `renamed` / `transferred` → matched by the new and the old
 *   name; a sync is requested (GitHub redirects the old URL) and a warning
 *   says the source URL should be updated. `deleted` → a sync is requested:
 *   it finds the upstream gone and marks the row `missing_on_primary`
 *   (retried on the slow cadence), keeping the mirror as the last copy.
 *   `edited` with a new default branch → a sync (the mirror follows HEAD).
 * - Project data (issues, comments, pull requests, reviews, labels,
 *   milestones, releases, members, branch protection, the repository
 *   itself) → a project delivery for the imports of that repository
 *   (github-project.ts), besides any sync request above.
 * - `ping` → 200; anything else → 202 ignored.
 */
export function readGitHub(event: string, payload: Payload): DeliveryIntent {
  if (event === 'ping') {
    return { answer: { status: 200, result: 'ignored', event, reason: 'ping', body: { result: 'pong', zen: stringAt(payload, 'zen') ?? null } } };
  }
  const repository = objectAt(payload, 'repository');
  if (REF_EVENTS.has(event)) {
    if (!repository) return { answer: { status: 202, result: 'ignored', event, reason: 'the payload has no repository' } };
    return { request: { event, keys: repositoryKeys(repository) } };
  }
  const project = readProjectDelivery(event, payload);
  if (event === 'repository' && repository) {
    const mirror = readRepositoryEvent(payload, repository);
    if ('answer' in mirror) return project ? { project } : mirror;
    return project ? { ...mirror, project } : mirror;
  }
  if (project) return { project };
  return { answer: { status: 202, result: 'ignored', event, reason: `forgesync does not act on "${event}" events` } };
}

function readRepositoryEvent(payload: Payload, repository: Payload): { request: SyncRequestIntent } | { answer: DeliveryOutcome } {
  const action = stringAt(payload, 'action') ?? '';
  const event = `repository.${action}`;
  const changes = objectAt(payload, 'changes');
  switch (action) {
    case 'renamed':
    case 'transferred': {
      const old = previousFullName(repository, changes, action);
      const note = `repository ${action} from ${old ?? '?'} to ${stringAt(repository, 'full_name') ?? '?'}; GitHub redirects the old URL, but update the source URL`;
      return { request: { event, keys: [...repositoryKeys(repository), fullNameKey(hostOf(repository), old)], note, warnWhenAccepted: true } };
    }
    case 'deleted':
      return {
        request: { event, keys: repositoryKeys(repository), note: 'repository deleted upstream: the next sync marks it missing_on_primary; the mirror is kept', warnWhenAccepted: true },
      };
    case 'edited':
      if (objectAt(changes, 'default_branch')) return { request: { event, keys: repositoryKeys(repository) } };
      return { answer: { status: 202, result: 'ignored', event, reason: 'only a default branch change matters to a mirror' } };
    default:
      return { answer: { status: 202, result: 'ignored', event, reason: `forgesync does not act on repository "${action}"` } };
  }
}

/** Every key a repository object can match by: clone, ssh, git, html and svn URLs, and host/full_name. */
export function repositoryKeys(repository: Payload): (string | null)[] {
  return [
    matchKey(stringAt(repository, 'clone_url')),
    matchKey(stringAt(repository, 'ssh_url')),
    matchKey(stringAt(repository, 'html_url')),
    matchKey(stringAt(repository, 'git_url')),
    matchKey(stringAt(repository, 'svn_url')),
    fullNameKey(hostOf(repository), stringAt(repository, 'full_name')),
  ];
}

/** `owner/name` before a rename (`changes.repository.name.from`) or a transfer (`changes.owner.from.*.login`). */
function previousFullName(repository: Payload, changes: Payload | undefined, action: string): string | undefined {
  const fullName = stringAt(repository, 'full_name');
  const [owner, name] = fullName?.split('/') ?? [];
  if (action === 'renamed') {
    const from = stringAt(objectAt(objectAt(changes, 'repository'), 'name'), 'from');
    return owner && from ? `${owner}/${from}` : undefined;
  }
  const previous = objectAt(objectAt(changes, 'owner'), 'from');
  const login = stringAt(objectAt(previous, 'user'), 'login') ?? stringAt(objectAt(previous, 'organization'), 'login');
  return login && name ? `${login}/${name}` : undefined;
}

/** The web host of a repository (GitHub Enterprise has its own), from html_url; github.com by default. */
function hostOf(repository: Payload): string {
  const url = stringAt(repository, 'html_url');
  // The match key is memoised (a forge names the same repositories again and again) and starts with the host.
  const key = matchKey(url);
  if (key) return matchKeyHost(key);
  try {
    return url ? new URL(url).hostname.toLowerCase() : 'github.com';
  } catch {
    return 'github.com';
  }
}
