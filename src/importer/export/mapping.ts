import { ArchiveUrls, repositoryOfApiUrl } from './urls.js';

/**
 * GitHub's REST JSON (as the importer stored it) → migration-archive
 * records, one function per record type. The fields, their order and their
 * encodings (references as URLs, review states as numbers, enforcement
 * levels) follow what GitHub's exporter writes (ghe-migrator, the
 * Migrations API); where the REST data has nothing for a field the archive
 * has, it is empty (`[]`, `null`) rather than invented.
 *
 * Bodies are passed through as given: the caller rewrites attachment links
 * before (see AttachmentLinker).
 */

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function int(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) ? n : undefined;
}

function orNull(value: unknown): unknown {
  return value === undefined ? null : value;
}

function enabled(value: unknown): boolean {
  return obj(value)?.enabled === true;
}

/** What the mappers need besides the record: the URLs, and the organization owning the repository (for team URLs). */
export interface MappingContext {
  urls: ArchiveUrls;
  /** The owner's login: teams live in it. */
  org: string;
}

/** A user's archive URL from a REST user object (or null for none, or a deleted user). */
export function userUrl(ctx: MappingContext, user: unknown): string | null {
  const login = str(obj(user)?.login);
  return login ? ctx.urls.user(login) : null;
}

/** A team's archive URL from a REST team object. */
export function teamUrl(ctx: MappingContext, team: unknown): string | null {
  const slug = str(obj(team)?.slug);
  return slug ? ctx.urls.team(ctx.org, slug) : null;
}

function userUrls(ctx: MappingContext, users: unknown): string[] {
  return arr(users)
    .map((user) => userUrl(ctx, user))
    .filter((url): url is string => url !== null);
}

function teamUrls(ctx: MappingContext, teams: unknown): string[] {
  return arr(teams)
    .map((team) => teamUrl(ctx, team))
    .filter((url): url is string => url !== null);
}

function labelUrls(ctx: MappingContext, labels: unknown): string[] {
  const urls: string[] = [];
  for (const label of arr(labels)) {
    const name = typeof label === 'string' ? label : str(obj(label)?.name);
    if (name) urls.push(ctx.urls.label(name));
  }
  return urls;
}

function milestoneUrl(ctx: MappingContext, milestone: unknown): string | null {
  const number = int(obj(milestone)?.number);
  return number === undefined ? null : ctx.urls.milestone(number);
}

/** `repositories_NNNNNN.json`: the repository, with its labels and collaborators embedded as GitHub's exporter embeds them. */
export function repositoryRecord(
  ctx: MappingContext,
  repo: Json,
  parts: { labels: Json[]; collaborators: Json[]; gitUrl: string | null; wikiUrl: string | null },
): Json {
  const security = obj(repo.security_and_analysis);
  const status = (name: string) => obj(security?.[name])?.status === 'enabled';
  const record: Json = {
    type: 'repository',
    url: ctx.urls.repository,
    owner: userUrl(ctx, repo.owner) ?? ctx.urls.user(ctx.urls.owner),
    name: str(repo.name) ?? ctx.urls.repo,
    description: str(repo.description) ?? '',
    website: str(repo.homepage) ?? '',
    private: repo.private === true,
    has_issues: repo.has_issues !== false,
    has_wiki: repo.has_wiki === true,
    has_downloads: repo.has_downloads !== false,
    is_archived: repo.archived === true,
    labels: parts.labels,
    collaborators: parts.collaborators,
    created_at: orNull(repo.created_at),
    git_url: parts.gitUrl,
    default_branch: str(repo.default_branch) ?? 'main',
    webhooks: [],
    page: null,
    public_keys: [],
    repository_topics: arr(repo.topics)
      .filter((topic): topic is string => typeof topic === 'string')
      .map((topic) => ({ topic_name: topic, repository: ctx.urls.repository, state: 'created' })),
    security_and_analysis: {
      dependency_graph: false,
      vulnerability_alerts: false,
      vulnerability_updates: status('dependabot_security_updates'),
      advanced_security: status('advanced_security'),
      token_scanning: status('secret_scanning'),
      token_scanning_push_protection: status('secret_scanning_push_protection'),
    },
    autolinks: [],
    general_settings: generalSettings(repo),
  };
  if (parts.wikiUrl) record.wiki_url = parts.wikiUrl;
  return record;
}

/** The repository settings the REST data has (GitHub sends the merge settings to admins only: absent ones are left out). */
function generalSettings(repo: Json): Json {
  const settings: Json = {};
  const copy = (to: string, from: string) => {
    if (typeof repo[from] === 'boolean') settings[to] = repo[from];
  };
  copy('template', 'is_template');
  copy('allow_forking', 'allow_forking');
  copy('projects', 'has_projects');
  copy('discussions', 'has_discussions');
  copy('merge_commit', 'allow_merge_commit');
  copy('squash_merge', 'allow_squash_merge');
  copy('rebase_merge', 'allow_rebase_merge');
  copy('auto_merge', 'allow_auto_merge');
  copy('delete_branch_heads', 'delete_branch_on_merge');
  copy('update_branch', 'allow_update_branch');
  return settings;
}

/** A label as the repository record embeds it. */
export function embeddedLabel(ctx: MappingContext, label: Json): Json {
  const name = str(label.name) ?? '';
  return {
    url: ctx.urls.label(name),
    name,
    color: str(label.color) ?? 'ededed',
    description: str(label.description) ?? '',
    created_at: orNull(label.created_at),
  };
}

/** `labels_NNNNNN.json`: a label on its own (the format embeds them in the repository; both are written). */
export function labelRecord(ctx: MappingContext, label: Json): Json {
  const { url, ...rest } = embeddedLabel(ctx, label);
  return { type: 'label', url, repository: ctx.urls.repository, ...rest };
}

/** A collaborator as the repository record embeds it: `{ user, permission }` (`admin`, `maintain`, `write`, `triage`, `read`). */
export function embeddedCollaborator(ctx: MappingContext, collaborator: Json): Json | undefined {
  const user = userUrl(ctx, collaborator);
  if (!user) return undefined;
  return { user, permission: permissionOf(collaborator) };
}

function permissionOf(collaborator: Json): string {
  const role = str(collaborator.role_name);
  if (role) return role === 'pull' ? 'read' : role === 'push' ? 'write' : role;
  const permissions = obj(collaborator.permissions) ?? {};
  if (permissions.admin === true) return 'admin';
  if (permissions.maintain === true) return 'maintain';
  if (permissions.push === true) return 'write';
  if (permissions.triage === true) return 'triage';
  return 'read';
}

/** `users_NNNNNN.json`: a profile (`GET /users/{login}`). */
export function userRecord(ctx: MappingContext, user: Json): Json | undefined {
  const login = str(user.login);
  if (!login) return undefined;
  const email = str(user.email);
  return {
    type: 'user',
    url: ctx.urls.user(login),
    avatar_url: orNull(user.avatar_url),
    login,
    name: orNull(user.name),
    bio: orNull(user.bio),
    company: orNull(user.company),
    website: str(user.blog) || null,
    location: orNull(user.location),
    emails: email ? [{ address: email, primary: true, verified: true }] : [],
    billing_plan: null,
    created_at: orNull(user.created_at),
  };
}

/** `organizations_NNNNNN.json`: the organization owning the repository (what the REST data says of it). */
export function organizationRecord(ctx: MappingContext, owner: Json, organization: Json | undefined): Json {
  const login = str(owner.login) ?? ctx.org;
  return {
    type: 'organization',
    url: ctx.urls.user(login),
    login,
    name: str(organization?.name) ?? login,
    description: orNull(organization?.description),
    website: null,
    location: null,
    email: null,
    members: [],
  };
}

/** `teams_NNNNNN.json`: a team met in review requests or branch protections. */
export function teamRecord(ctx: MappingContext, team: Json): Json | undefined {
  const url = teamUrl(ctx, team);
  if (!url) return undefined;
  const permission = str(team.permission);
  return {
    type: 'team',
    url,
    organization: ctx.urls.user(ctx.org),
    name: str(team.name) ?? str(team.slug),
    description: orNull(team.description),
    permissions: permission ? [{ repository: ctx.urls.repository, access: permission === 'pull' ? 'read' : permission === 'push' ? 'write' : permission }] : [],
    members: [],
    created_at: null,
  };
}

/** `milestones_NNNNNN.json`. */
export function milestoneRecord(ctx: MappingContext, milestone: Json): Json | undefined {
  const number = int(milestone.number);
  if (number === undefined) return undefined;
  return {
    type: 'milestone',
    url: ctx.urls.milestone(number),
    repository: ctx.urls.repository,
    user: userUrl(ctx, milestone.creator),
    title: str(milestone.title) ?? '',
    description: str(milestone.description) ?? '',
    state: str(milestone.state) ?? 'open',
    due_on: orNull(milestone.due_on),
    created_at: orNull(milestone.created_at),
    updated_at: orNull(milestone.updated_at),
    closed_at: orNull(milestone.closed_at),
  };
}

/** `issues_NNNNNN.json`. */
export function issueRecord(ctx: MappingContext, issue: Json, body: unknown): Json | undefined {
  const number = int(issue.number);
  if (number === undefined) return undefined;
  const assignees = userUrls(ctx, issue.assignees);
  return {
    type: 'issue',
    url: ctx.urls.issue(number),
    repository: ctx.urls.repository,
    user: userUrl(ctx, issue.user),
    title: str(issue.title) ?? '',
    body: orNull(body),
    assignee: assignees[0] ?? userUrl(ctx, issue.assignee),
    assignees,
    milestone: milestoneUrl(ctx, issue.milestone),
    labels: labelUrls(ctx, issue.labels),
    reactions: [],
    closed_at: orNull(issue.closed_at),
    created_at: orNull(issue.created_at),
    updated_at: orNull(issue.updated_at),
  };
}

/** A review request (a stored `pull_request_review_request`: a user or a team) as a pull request embeds it. */
export function reviewRequest(ctx: MappingContext, key: string, reviewer: Json): Json | undefined {
  const isTeam = /^\d+\/team\//.test(key);
  const url = isTeam ? teamUrl(ctx, reviewer) : userUrl(ctx, reviewer);
  if (!url) return undefined;
  return { reviewer: url, reviewer_type: isTeam ? 'Team' : 'User', created_at: null, updated_at: null, dismissed_at: null };
}

/** `pull_requests_NNNNNN.json`, from the `/pulls` list item. */
export function pullRequestRecord(ctx: MappingContext, pull: Json, body: unknown, reviewRequests: Json[]): Json | undefined {
  const number = int(pull.number);
  if (number === undefined) return undefined;
  const assignees = userUrls(ctx, pull.assignees);
  return {
    type: 'pull_request',
    url: ctx.urls.pull(number),
    user: userUrl(ctx, pull.user),
    repository: ctx.urls.repository,
    title: str(pull.title) ?? '',
    body: orNull(body),
    base: branchRef(ctx, pull.base),
    head: branchRef(ctx, pull.head),
    assignee: assignees[0] ?? userUrl(ctx, pull.assignee),
    assignees,
    milestone: milestoneUrl(ctx, pull.milestone),
    labels: labelUrls(ctx, pull.labels),
    reactions: [],
    review_requests: reviewRequests,
    close_issue_references: [],
    work_in_progress: pull.draft === true,
    merged_at: orNull(pull.merged_at),
    closed_at: orNull(pull.closed_at),
    created_at: orNull(pull.created_at),
    merge_commit_sha: orNull(pull.merge_commit_sha),
  };
}

function branchRef(ctx: MappingContext, ref: unknown): Json {
  const branch = obj(ref) ?? {};
  const repo = obj(branch.repo);
  const fullName = str(repo?.full_name);
  const own = `${ctx.urls.owner}/${ctx.urls.repo}`.toLowerCase();
  return {
    ref: orNull(branch.ref),
    sha: orNull(branch.sha),
    user: userUrl(ctx, branch.user),
    // A fork that was deleted has no repo.
    repo: !repo ? null : !fullName || fullName.toLowerCase() === own ? ctx.urls.repository : ctx.urls.otherRepository(fullName),
  };
}

/** The issue or pull request a comment or event belongs to: its URL and the field naming it. */
export interface Parent {
  field: 'issue' | 'pull_request';
  url: string;
}

export function parentOf(ctx: MappingContext, number: number, isPullRequest: boolean): Parent {
  return isPullRequest ? { field: 'pull_request', url: ctx.urls.pull(number) } : { field: 'issue', url: ctx.urls.issue(number) };
}

/** `issue_comments_NNNNNN.json` (a comment on a pull request names it as `pull_request`). */
export function issueCommentRecord(ctx: MappingContext, comment: Json, parent: Parent, body: unknown): Json | undefined {
  const id = int(comment.id);
  if (id === undefined) return undefined;
  return {
    type: 'issue_comment',
    url: ctx.urls.issueComment(parent.url, id),
    [parent.field]: parent.url,
    user: userUrl(ctx, comment.user),
    body: orNull(body),
    formatter: 'markdown',
    reactions: [],
    created_at: orNull(comment.created_at),
  };
}

/** Review states as GitHub's exporter numbers them. */
const REVIEW_STATES: Record<string, number> = { PENDING: 0, COMMENTED: 1, CHANGES_REQUESTED: 30, APPROVED: 40, DISMISSED: 50 };

/** `pull_request_reviews_NNNNNN.json`. */
export function reviewRecord(ctx: MappingContext, review: Json, number: number, body: unknown): Json | undefined {
  const id = int(review.id);
  if (id === undefined) return undefined;
  return {
    type: 'pull_request_review',
    url: ctx.urls.review(number, id),
    pull_request: ctx.urls.pull(number),
    user: userUrl(ctx, review.user),
    body: body ?? '',
    head_sha: orNull(review.commit_id),
    formatter: 'markdown',
    state: REVIEW_STATES[str(review.state)?.toUpperCase() ?? ''] ?? REVIEW_STATES.COMMENTED,
    reactions: [],
    created_at: orNull(review.submitted_at ?? review.created_at),
    submitted_at: orNull(review.submitted_at),
  };
}

/**
 * `pull_request_review_comments_NNNNNN.json`. A thread is named by the id of
 * its first comment (GitHub's REST API has no thread ids; replies name the
 * first comment in `in_reply_to_id`).
 */
export function reviewCommentRecord(ctx: MappingContext, comment: Json, number: number, body: unknown): Json | undefined {
  const id = int(comment.id);
  if (id === undefined) return undefined;
  const reviewId = int(comment.pull_request_review_id);
  const replyTo = int(comment.in_reply_to_id);
  return {
    type: 'pull_request_review_comment',
    url: ctx.urls.reviewComment(number, id),
    pull_request: ctx.urls.pull(number),
    pull_request_review: reviewId === undefined ? null : ctx.urls.review(number, reviewId),
    pull_request_review_thread: ctx.urls.reviewThread(number, replyTo ?? id),
    user: userUrl(ctx, comment.user),
    body: orNull(body),
    formatter: 'markdown',
    diff_hunk: orNull(comment.diff_hunk),
    path: orNull(comment.path),
    position: orNull(comment.position),
    original_position: orNull(comment.original_position),
    commit_id: orNull(comment.commit_id),
    original_commit_id: orNull(comment.original_commit_id),
    state: 1,
    in_reply_to: replyTo === undefined ? null : ctx.urls.reviewComment(number, replyTo),
    reactions: [],
    created_at: orNull(comment.created_at),
    subject_type: str(comment.subject_type) ?? 'line',
  };
}

/** `pull_request_review_threads_NNNNNN.json`: the thread a first review comment (one without `in_reply_to_id`) starts. */
export function reviewThreadRecord(ctx: MappingContext, comment: Json, number: number): Json | undefined {
  const id = int(comment.id);
  if (id === undefined || int(comment.in_reply_to_id) !== undefined) return undefined;
  const reviewId = int(comment.pull_request_review_id);
  const side = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : null);
  return {
    type: 'pull_request_review_thread',
    url: ctx.urls.reviewThread(number, id),
    pull_request: ctx.urls.pull(number),
    pull_request_review: reviewId === undefined ? null : ctx.urls.review(number, reviewId),
    diff_hunk: orNull(comment.diff_hunk),
    path: orNull(comment.path),
    position: orNull(comment.position),
    original_position: orNull(comment.original_position),
    commit_id: orNull(comment.commit_id),
    original_commit_id: orNull(comment.original_commit_id),
    start_line: orNull(comment.start_line),
    line: orNull(comment.line),
    start_side: side(comment.start_side),
    side: side(comment.side),
    original_start_line: orNull(comment.original_start_line),
    original_line: orNull(comment.original_line),
    created_at: orNull(comment.created_at),
    resolved_at: null,
    resolver: null,
    subject_type: str(comment.subject_type) ?? 'line',
    outdated: comment.position === null,
  };
}

/** `issue_events_NNNNNN.json`, from an `/issues/events` item: the event's own fields, in GitHub's exporter's names. */
export function issueEventRecord(ctx: MappingContext, event: Json, parent: Parent): Json | undefined {
  const id = int(event.id);
  const name = str(event.event);
  if (id === undefined || !name) return undefined;
  const record: Json = { type: 'issue_event', url: ctx.urls.event(parent.url, id), [parent.field]: parent.url, actor: userUrl(ctx, event.actor), event: name };
  const label = obj(event.label);
  if (label && str(label.name)) {
    record.label = ctx.urls.label(str(label.name)!);
    record.label_name = label.name;
    if (str(label.color)) record.label_color = label.color;
  }
  const milestone = obj(event.milestone);
  if (milestone && str(milestone.title)) record.milestone_title = milestone.title;
  const rename = obj(event.rename);
  if (rename) {
    if (typeof rename.from === 'string') record.title_was = rename.from;
    if (typeof rename.to === 'string') record.title_is = rename.to;
  }
  const subject =
    userUrl(ctx, event.assignee) ?? userUrl(ctx, event.requested_reviewer) ?? teamUrl(ctx, event.requested_team) ?? null;
  if (subject) record.subject = subject;
  if (str(event.commit_id)) {
    record.commit_id = event.commit_id;
    const repo = repositoryOfApiUrl(event.commit_url);
    if (repo) record.commit_repository = repo.toLowerCase() === `${ctx.urls.owner}/${ctx.urls.repo}`.toLowerCase() ? ctx.urls.repository : ctx.urls.otherRepository(repo);
  }
  if (str(event.lock_reason)) record.lock_reason = event.lock_reason;
  record.created_at = orNull(event.created_at);
  return record;
}

/** A release asset as a release embeds it, pointing at its file in the archive. */
export function releaseAsset(ctx: MappingContext, asset: Json, release: string, assetUrl: string): Json {
  return {
    type: 'release_asset',
    url: orNull(asset.browser_download_url ?? asset.url),
    release,
    user: userUrl(ctx, asset.uploader),
    asset_name: str(asset.name) ?? 'asset',
    asset_content_type: str(asset.content_type) ?? 'application/octet-stream',
    asset_url: assetUrl,
    created_at: orNull(asset.created_at),
  };
}

/** `releases_NNNNNN.json`. */
export function releaseRecord(ctx: MappingContext, release: Json, body: unknown, assets: Json[]): Json | undefined {
  const tag = str(release.tag_name);
  if (!tag) return undefined;
  return {
    type: 'release',
    url: ctx.urls.release(tag),
    repository: ctx.urls.repository,
    user: userUrl(ctx, release.author),
    name: str(release.name) ?? '',
    tag_name: tag,
    body: body ?? '',
    state: release.draft === true ? 'draft' : 'published',
    pending_tag: tag,
    prerelease: release.prerelease === true,
    target_commitish: orNull(release.target_commitish),
    release_assets: assets,
    reactions: [],
    published_at: orNull(release.published_at),
    created_at: orNull(release.created_at),
  };
}

/** Enforcement levels as GitHub's exporter writes them: 0 off, 1 for non-admins, 2 for everyone. */
function level(on: boolean, admins: boolean): number {
  return on ? (admins ? 2 : 1) : 0;
}

const LEVEL_NAMES = ['off', 'non_admins', 'everyone'] as const;

/** `protected_branches_NNNNNN.json`, from `GET /repos/{o}/{r}/branches/{branch}/protection`. */
export function protectedBranchRecord(ctx: MappingContext, branch: string, protection: Json): Json {
  const admins = enabled(protection.enforce_admins);
  const reviews = obj(protection.required_pull_request_reviews);
  const checks = obj(protection.required_status_checks);
  const restrictions = obj(protection.restrictions);
  const dismissal = obj(reviews?.dismissal_restrictions);
  const contexts = arr(checks?.contexts).filter((context): context is string => typeof context === 'string');
  const checkContexts = arr(checks?.checks)
    .map((check) => str(obj(check)?.context))
    .filter((context): context is string => context !== undefined);
  const checkLevel = str(checks?.enforcement_level);
  return {
    type: 'protected_branch',
    name: branch,
    url: ctx.urls.protectedBranch(branch),
    creator_url: null,
    repository_url: ctx.urls.repository,
    admin_enforced: admins,
    block_deletions_enforcement_level: level(!enabled(protection.allow_deletions), admins),
    block_force_pushes_enforcement_level: level(!enabled(protection.allow_force_pushes), admins),
    dismiss_stale_reviews_on_push: reviews?.dismiss_stale_reviews === true,
    pull_request_reviews_enforcement_level: LEVEL_NAMES[level(reviews !== undefined, admins)],
    require_code_owner_review: reviews?.require_code_owner_reviews === true,
    required_status_checks_enforcement_level:
      checkLevel && (LEVEL_NAMES as readonly string[]).includes(checkLevel) ? checkLevel : LEVEL_NAMES[level(checks !== undefined, admins)],
    strict_required_status_checks_policy: checks?.strict === true,
    authorized_actors_only: restrictions !== undefined,
    authorized_user_urls: userUrls(ctx, restrictions?.users),
    authorized_team_urls: teamUrls(ctx, restrictions?.teams),
    dismissal_restricted_user_urls: userUrls(ctx, dismissal?.users),
    dismissal_restricted_team_urls: teamUrls(ctx, dismissal?.teams),
    required_status_checks: [...new Set([...contexts, ...checkContexts])],
    requires_approving_reviews: reviews !== undefined,
    required_approving_review_count: int(reviews?.required_approving_review_count) ?? 0,
    requires_commit_signatures: enabled(protection.required_signatures),
    requires_linear_history: enabled(protection.required_linear_history),
    blocks_creations: enabled(protection.block_creations),
    allows_force_pushes: enabled(protection.allow_force_pushes),
    allows_deletions: enabled(protection.allow_deletions),
    requires_status_checks: checks !== undefined,
    restricts_review_dismissals: dismissal !== undefined,
    requires_review_thread_resolution: enabled(protection.required_conversation_resolution),
    require_last_push_approval: reviews?.require_last_push_approval === true,
  };
}

/** The teams a branch protection names (restrictions, dismissal restrictions), for `teams_NNNNNN.json`. */
export function protectionTeams(protection: Json): Json[] {
  const reviews = obj(protection.required_pull_request_reviews);
  return [...arr(obj(protection.restrictions)?.teams), ...arr(obj(reviews?.dismissal_restrictions)?.teams)]
    .map(obj)
    .filter((team): team is Json => team !== undefined);
}
