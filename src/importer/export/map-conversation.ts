import { obj, str, int, orNull, userUrl, teamUrl, userUrls, labelUrls, milestoneUrl, type Json, type MappingContext } from './map-common.js';
import { repositoryOfApiUrl } from './urls.js';

/*
 * The conversation records of a migration archive: issues, pull requests
 * (with their review requests), comments, reviews and review threads, issue
 * events, releases and their assets. Fields, order and encodings follow
 * GitHub's exporter (references as URLs, review states as numbers). Bodies
 * are passed through as given: the caller rewrites attachment links before
 * (see AttachmentLinker).
 */

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
