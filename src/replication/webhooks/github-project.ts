import { isObject, objectAt, stringAt, type Payload } from './body.js';

/**
 * What a GitHub delivery about a repository's project data (issues, pull
 * requests, comments, reviews, labels, milestones, releases, collaborators,
 * branch protection, the repository itself) names: the objects that
 * changed. Whoever follows the repository's project data (the importer)
 * fetches each of them again from the API: the payload says where to look,
 * the API what is true. Plain data, so a reader thread can send it back.
 */
export interface ProjectDelivery {
  /** `issues.opened`, `label.deleted`… for the log. */
  event: string;
  /** GitHub's id of the repository: followers match by it, not by name (a rename or transfer keeps it). */
  repositoryId: number;
  /** The objects named, each once. */
  targets: ProjectTarget[];
}

/**
 * One object to fetch again, by a key that names it for as long as it
 * exists (deliveries for it coalesce by that key):
 * `issue:<number>`, `pull:<number>`, `comment:<id>`, `review-comment:<id>`,
 * `label:<id>`, `milestone:<number>`, `release:<id>`, `collaborators`,
 * `protected-branches`, `repository`. `detail` is what the payload hints
 * (`deleted`: it says the object is gone; `issue`/`pull`: the number a
 * comment is on; `name`: a label's name, by which the API reads it).
 */
export interface ProjectTarget {
  key: string;
  detail: ProjectTargetDetail;
}

export interface ProjectTargetDetail {
  deleted?: true;
  issue?: number;
  pull?: number;
  name?: string;
}

/** Events about project data, and how each names its targets. */
const READERS: Record<string, (payload: Payload, deleted: boolean) => ProjectTarget[]> = {
  issues: (payload, deleted) => byNumber('issue', objectAt(payload, 'issue'), deleted),
  issue_comment: (payload, deleted) => {
    const issue = numberAt(objectAt(payload, 'issue'), 'number');
    return byId('comment', objectAt(payload, 'comment'), { ...gone(deleted), ...(issue !== undefined ? { issue } : {}) });
  },
  // A pull request is two objects: its own and its issue shape (labels, assignees, comment count).
  pull_request: (payload) => [...byNumber('pull', objectAt(payload, 'pull_request'), false), ...byNumber('issue', objectAt(payload, 'pull_request'), false)],
  // Reviews come with their pull request (its job lists them); a review moves the issue shape's `updated_at` too.
  pull_request_review: (payload) => [...byNumber('pull', objectAt(payload, 'pull_request'), false), ...byNumber('issue', objectAt(payload, 'pull_request'), false)],
  pull_request_review_comment: (payload, deleted) => {
    const pull = numberAt(objectAt(payload, 'pull_request'), 'number');
    return byId('review-comment', objectAt(payload, 'comment'), { ...gone(deleted), ...(pull !== undefined ? { pull } : {}) });
  },
  // Resolving a thread changes its comments; each is fetched again.
  pull_request_review_thread: (payload) => {
    const pull = numberAt(objectAt(payload, 'pull_request'), 'number');
    const comments = objectAt(payload, 'thread')?.comments;
    if (!Array.isArray(comments)) return [];
    return comments.flatMap((comment) => byId('review-comment', isObject(comment) ? comment : undefined, pull !== undefined ? { pull } : {}));
  },
  label: (payload, deleted) => {
    const name = stringAt(objectAt(payload, 'label'), 'name');
    return byId('label', objectAt(payload, 'label'), { ...gone(deleted), ...(name ? { name } : {}) });
  },
  milestone: (payload, deleted) => byNumber('milestone', objectAt(payload, 'milestone'), deleted),
  release: (payload, deleted) => byId('release', objectAt(payload, 'release'), gone(deleted)),
  // Collaborators and protection rules are small lists, read again whole (conditionally).
  member: () => [{ key: 'collaborators', detail: {} }],
  branch_protection_rule: () => [{ key: 'protected-branches', detail: {} }],
  // A transferred repository moved (its id stays): only `deleted` says it is gone.
  repository: (payload) => [{ key: 'repository', detail: gone(stringAt(payload, 'action') === 'deleted') }],
};

/** Actions that say the object is gone (from this repository: a transferred issue is another repository's now). */
const GONE_ACTIONS = new Set(['deleted', 'transferred']);

/**
 * The project delivery a GitHub event names, or undefined for events that
 * are not about project data (push, ping…) or payloads without a
 * repository id. Pure.
 */
export function readProjectDelivery(event: string, payload: Payload): ProjectDelivery | undefined {
  const read = READERS[event];
  const repositoryId = numberAt(objectAt(payload, 'repository'), 'id');
  if (!read || repositoryId === undefined) return undefined;
  const action = stringAt(payload, 'action');
  const targets = new Map<string, ProjectTarget>();
  for (const target of read(payload, action !== undefined && GONE_ACTIONS.has(action))) targets.set(target.key, target);
  if (targets.size === 0) return undefined;
  return { event: action ? `${event}.${action}` : event, repositoryId, targets: [...targets.values()] };
}

function gone(deleted: boolean): ProjectTargetDetail {
  return deleted ? { deleted: true } : {};
}

function byNumber(kind: string, object: Payload | undefined, deleted: boolean): ProjectTarget[] {
  const number = numberAt(object, 'number');
  return number === undefined ? [] : [{ key: `${kind}:${number}`, detail: gone(deleted) }];
}

function byId(kind: string, object: Payload | undefined, detail: ProjectTargetDetail): ProjectTarget[] {
  const id = numberAt(object, 'id');
  return id === undefined ? [] : [{ key: `${kind}:${id}`, detail }];
}

/** `object[key]` when it is a non-negative safe integer (GitHub's ids and numbers). */
function numberAt(object: Payload | undefined, key: string): number | undefined {
  const value = object?.[key];
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}
