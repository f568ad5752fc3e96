/**
 * Changes to the fake's project model as GitHub makes them when someone acts
 * on the repository after the import began: deletions (issues, comments,
 * review comments, labels, milestones, releases), edits that GitHub reports
 * with `changes` (labels, milestones, releases, collaborators), review
 * dismissals and thread resolution, branch protection, and the repository's
 * rename and transfer. Each is stamped "now" (see FakeProject.mutationTime)
 * and bumps the project's version, so cached answers and ETags change.
 *
 * Webhook deliveries for these are sent by FakeUpstream (upstream.ts); the
 * functions here only change the model, for tests that want a silent change.
 */
import { defaultProtection } from './generate.js';
import { iso, pullOf, type BranchRecord, type CollaboratorRecord, type CommentRecord, type FakeProject, type IssueRecord, type LabelRecord, type MilestoneRecord, type Permission, type ProtectionSettings, type ReleaseRecord, type ReviewCommentRecord, type ReviewRecord } from './project.js';

/** What an edit changed, as webhooks' `changes` show it: each changed field's former value. */
export type Changes = Record<string, { from: unknown }>;

/** Removes the items matching `test` from `items` in place; returns them. */
function removeWhere<T>(items: T[], test: (item: T) => boolean): T[] {
  const removed: T[] = [];
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i] as T)) removed.unshift(...items.splice(i, 1));
  return removed;
}

/** The fields of `patch` whose value differs from `current`, with their former values (under `rename[key]` when given). */
function diff<T extends object>(current: T, patch: Partial<T>, rename: Partial<Record<keyof T, string>> = {}): Changes {
  const changes: Changes = {};
  for (const key of Object.keys(patch) as (keyof T)[]) {
    if (patch[key] === undefined || patch[key] === current[key]) continue;
    changes[rename[key] ?? String(key)] = { from: current[key] };
  }
  return changes;
}

function missing(what: string): never {
  throw new Error(`the fake project has no ${what}`);
}

// ---- issues and comments ---------------------------------------------------

/** Deletes an issue with its comments and events (GitHub cannot delete pull requests); its number then answers 410. */
export function deleteIssue(p: FakeProject, number: number): IssueRecord {
  const issue = p.issue(number);
  if (issue.pull) throw new Error(`#${number} is a pull request: GitHub deletes issues only`);
  removeWhere(p.issues, (i) => i === issue);
  p.byNumber.delete(number);
  for (const comment of removeWhere(p.comments, (c) => c.issue === number)) p.commentById.delete(comment.id);
  p.commentsByIssue.delete(number);
  removeWhere(p.events, (e) => e.issue === number);
  p.eventsByIssue.delete(number);
  p.touch('issue');
  return issue;
}

/** Removes a label from an issue or pull request, with an `unlabeled` event. */
export function unlabelIssue(p: FakeProject, number: number, name: string, by: string): IssueRecord {
  const issue = p.issue(number);
  const label = p.label(name);
  if (!issue.labels.includes(name) || !label) throw new Error(`#${number} has no label ${name}`);
  issue.labels = issue.labels.filter((l) => l !== name);
  p.addEvent(issue, 'unlabeled', by, p.mutationTime(), { label: { name: label.name, color: label.color } });
  p.touch('label');
  return issue;
}

/** Edits a pull request's title and body (GitHub reports both in `changes`); returns what changed. */
export function editPull(p: FakeProject, number: number, patch: { title?: string; body?: string | null; by?: string }): { issue: IssueRecord; changes: Changes } {
  const issue = p.issue(number);
  pullOf(issue);
  const changes = diff(issue, { title: patch.title, body: patch.body });
  const at = p.mutationTime();
  if (patch.title !== undefined && patch.title !== issue.title) {
    p.addEvent(issue, 'renamed', patch.by ?? issue.user, at, { rename: { from: issue.title, to: patch.title } });
    issue.title = patch.title;
  }
  if (patch.body !== undefined) issue.body = patch.body;
  issue.updatedAt = at;
  p.touch('pull');
  return { issue, changes };
}

/** Deletes an issue comment: the issue's `comments` count drops, its `updated_at` stays. */
export function deleteComment(p: FakeProject, id: number): CommentRecord {
  const comment = p.commentById.get(id) ?? missing(`issue comment ${id}`);
  removeWhere(p.comments, (c) => c === comment);
  removeWhere(p.commentsByIssue.get(comment.issue) ?? [], (c) => c === comment);
  p.commentById.delete(id);
  p.issue(comment.issue).comments--;
  p.touch('comment');
  return comment;
}

// ---- review comments, reviews, threads -----------------------------------------

export function editReviewComment(p: FakeProject, id: number, body: string): { comment: ReviewCommentRecord; changes: Changes } {
  const comment = p.reviewCommentById.get(id) ?? missing(`review comment ${id}`);
  const changes = { body: { from: comment.body } };
  comment.body = body;
  comment.updatedAt = p.mutationTime();
  p.touch('review_comment');
  return { comment, changes };
}

/** Deletes a review comment: the pull request's `review_comments` count drops, its `updated_at` stays. */
export function deleteReviewComment(p: FakeProject, id: number): ReviewCommentRecord {
  const comment = p.reviewCommentById.get(id) ?? missing(`review comment ${id}`);
  removeWhere(p.reviewComments, (c) => c === comment);
  removeWhere(p.reviewCommentsByPull.get(comment.pull) ?? [], (c) => c === comment);
  p.reviewCommentById.delete(id);
  p.resolvedThreads.delete(id);
  p.touch('review_comment');
  return comment;
}

export function dismissReview(p: FakeProject, pull: number, id: number): ReviewRecord {
  const review = p.reviewsByPull.get(pull)?.find((r) => r.id === id) ?? missing(`review ${id} on #${pull}`);
  if (review.state !== 'APPROVED' && review.state !== 'CHANGES_REQUESTED') throw new Error(`review ${id} is ${review.state}: GitHub dismisses approvals and change requests only`);
  review.state = 'DISMISSED';
  const issue = p.issue(pull);
  issue.updatedAt = p.mutationTime();
  p.touch('review');
  return review;
}

/** Marks the thread of a review comment resolved or not; returns the thread's comments, first comment first. */
export function setThreadResolved(p: FakeProject, commentId: number, resolved: boolean): { root: ReviewCommentRecord; comments: ReviewCommentRecord[] } {
  const comment = p.reviewCommentById.get(commentId) ?? missing(`review comment ${commentId}`);
  const root = p.reviewCommentById.get(comment.inReplyTo ?? comment.id) ?? comment;
  if (resolved) p.resolvedThreads.add(root.id);
  else p.resolvedThreads.delete(root.id);
  p.touch('review_thread');
  const comments = (p.reviewCommentsByPull.get(root.pull) ?? []).filter((c) => c === root || c.inReplyTo === root.id);
  return { root, comments };
}

// ---- labels and milestones --------------------------------------------------

export function createLabel(p: FakeProject, input: { name: string; color: string; description?: string | null }): LabelRecord {
  if (p.labels.some((l) => l.name.toLowerCase() === input.name.toLowerCase())) throw new Error(`label ${input.name} already exists (GitHub: 422 already_exists)`);
  const label = p.createLabel(input.name, input.color, input.description ?? null);
  p.mutationTime();
  p.touch('label');
  return label;
}

/** Edits a label; a rename keeps its id and renames it on every issue that carries it. */
export function editLabel(p: FakeProject, name: string, patch: { name?: string; color?: string; description?: string | null }): { label: LabelRecord; changes: Changes } {
  const label = p.label(name) ?? missing(`label ${name}`);
  const changes = diff(label, patch);
  if (patch.name !== undefined && patch.name !== name) {
    if (p.label(patch.name)) throw new Error(`label ${patch.name} already exists (GitHub: 422 already_exists)`);
    for (const issue of p.issues) issue.labels = issue.labels.map((l) => (l === name ? (patch.name as string) : l));
    label.name = patch.name;
  }
  if (patch.color !== undefined) label.color = patch.color;
  if (patch.description !== undefined) label.description = patch.description;
  p.mutationTime();
  p.touch('label');
  return { label, changes };
}

/** Deletes a label, which GitHub also takes off every issue and pull request. */
export function deleteLabel(p: FakeProject, name: string): LabelRecord {
  const label = p.label(name) ?? missing(`label ${name}`);
  removeWhere(p.labels, (l) => l === label);
  for (const issue of p.issues) issue.labels = issue.labels.filter((l) => l !== name);
  p.mutationTime();
  p.touch('label');
  return label;
}

export function createMilestone(p: FakeProject, input: { title: string; description?: string | null; dueOn?: number | null; creator: string }): MilestoneRecord {
  const milestone = p.createMilestone({ ...input, at: p.mutationTime() });
  p.touch('milestone');
  return milestone;
}

export function editMilestone(p: FakeProject, number: number, patch: { title?: string; description?: string | null; dueOn?: number | null; state?: 'open' | 'closed' }): { milestone: MilestoneRecord; changes: Changes } {
  const milestone = p.milestone(number) ?? missing(`milestone ${number}`);
  const { state, ...fields } = patch;
  const changes = diff(milestone, fields, { dueOn: 'due_on' });
  if (changes.due_on) changes.due_on = { from: milestone.dueOn === null ? null : iso(milestone.dueOn) };
  const at = p.mutationTime();
  Object.assign(milestone, Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)));
  if (state !== undefined && state !== milestone.state) {
    milestone.state = state;
    milestone.closedAt = state === 'closed' ? at : null;
  }
  milestone.updatedAt = at;
  p.touch('milestone');
  return { milestone, changes };
}

/** Deletes a milestone; its issues and pull requests lose it. */
export function deleteMilestone(p: FakeProject, number: number): MilestoneRecord {
  const milestone = p.milestone(number) ?? missing(`milestone ${number}`);
  removeWhere(p.milestones, (m) => m === milestone);
  for (const issue of p.issues) if (issue.milestone === number) issue.milestone = null;
  p.mutationTime();
  p.touch('milestone');
  return milestone;
}

// ---- releases ----------------------------------------------------------------

export function createRelease(p: FakeProject, input: { tag: string; name?: string; body?: string; author: string; prerelease?: boolean; draft?: boolean }): ReleaseRecord {
  const release = p.addRelease({ ...input, at: p.mutationTime() });
  p.touch('release');
  return release;
}

/** Edits a release; `draft: false` publishes a draft (GitHub stamps `published_at` then). */
export function editRelease(p: FakeProject, id: number, patch: { name?: string; body?: string; tag?: string; prerelease?: boolean; draft?: boolean }): { release: ReleaseRecord; changes: Changes } {
  const release = p.releases.find((r) => r.id === id) ?? missing(`release ${id}`);
  const { name, body, tag } = patch;
  const changes = diff(release, { name, body, tag }, { tag: 'tag_name' });
  const at = p.mutationTime();
  if (name !== undefined) release.name = name;
  if (body !== undefined) release.body = body;
  if (tag !== undefined) release.tag = tag;
  if (patch.prerelease !== undefined) release.prerelease = patch.prerelease;
  if (patch.draft === false && release.draft) {
    release.draft = false;
    release.publishedAt = at;
  }
  p.touch('release');
  return { release, changes };
}

export function deleteRelease(p: FakeProject, id: number): ReleaseRecord {
  const release = p.releases.find((r) => r.id === id) ?? missing(`release ${id}`);
  removeWhere(p.releases, (r) => r === release);
  p.mutationTime();
  p.touch('release');
  return release;
}

// ---- collaborators and branch protection ------------------------------------------

/** A direct collaborator (the user is created when unknown); an existing one gets the new permission. */
export function setCollaborator(p: FakeProject, login: string, permission: Permission): { collaborator: CollaboratorRecord; from: Permission | undefined } {
  if (!p.users.has(login)) p.createUser(login, { createdAt: p.clock });
  let collaborator = p.collaborators.find((c) => c.login === login);
  const from = collaborator?.permission;
  if (collaborator) collaborator.permission = permission;
  else p.collaborators.push((collaborator = { login, permission, direct: true, outside: true }));
  p.mutationTime();
  p.touch('collaborator');
  return { collaborator, from };
}

export function removeCollaborator(p: FakeProject, login: string): CollaboratorRecord {
  const collaborator = p.collaborators.find((c) => c.login === login) ?? missing(`collaborator ${login}`);
  removeWhere(p.collaborators, (c) => c === collaborator);
  p.mutationTime();
  p.touch('collaborator');
  return collaborator;
}

/** The branch record of `name` (a pull request's head branch becomes one), or an error. */
function branchOf(p: FakeProject, name: string): BranchRecord {
  const known = p.branches.find((b) => b.name === name);
  if (known) return known;
  const pull = p.pulls.find((i) => pullOf(i).headRef === name && pullOf(i).branchExists);
  if (!pull) missing(`branch ${name}`);
  const branch: BranchRecord = { name, commit: `pr:${pull.number}:head`, protection: null };
  p.branches.push(branch);
  return branch;
}

/** Protects a branch (or changes its protection); `created` tells which. */
export function protectBranch(p: FakeProject, name: string, settings: Partial<ProtectionSettings> = {}): { branch: BranchRecord; created: boolean } {
  const branch = branchOf(p, name);
  const at = p.mutationTime();
  const created = branch.protection === null;
  branch.protection = created ? defaultProtection(settings) : { ...branch.protection, ...settings } as ProtectionSettings;
  if (created || !branch.rule) branch.rule = { id: p.nextId('rule'), createdAt: at, updatedAt: at };
  else branch.rule.updatedAt = at;
  p.touch('protection');
  return { branch, created };
}

/** Removes a branch's protection; returns the branch as it was protected (for the `deleted` delivery). */
export function unprotectBranch(p: FakeProject, name: string): BranchRecord {
  const branch = p.branches.find((b) => b.name === name && b.protection !== null) ?? missing(`protected branch ${name}`);
  const before = { ...branch };
  branch.protection = null;
  delete branch.rule;
  p.mutationTime();
  p.touch('protection');
  return before;
}

// ---- the repository --------------------------------------------------------------

function moveRepository(p: FakeProject, owner: string, name: string): string {
  const former = `${p.repo.owner}/${p.repo.name}`;
  if (!p.formerNames.includes(former.toLowerCase())) p.formerNames.push(former.toLowerCase());
  p.repo.owner = owner;
  p.repo.name = name;
  // The current name is no former one any more (renamed back).
  removeWhere(p.formerNames, (n) => n === `${owner}/${name}`.toLowerCase());
  p.repo.updatedAt = p.mutationTime();
  p.touch('repository');
  return former;
}

/** Renames the repository; its former name then answers 301. Returns the former name. */
export function renameRepository(p: FakeProject, name: string): string {
  const from = p.repo.name;
  moveRepository(p, p.repo.owner, name);
  return from;
}

/** Transfers the repository to another owner (an organization, created when unknown); returns the former owner's login. */
export function transferRepository(p: FakeProject, owner: string, type: 'User' | 'Organization' = 'Organization'): string {
  const from = p.repo.owner;
  if (!p.users.has(owner)) p.createUser(owner, { type, createdAt: p.clock });
  moveRepository(p, owner, p.repo.name);
  return from;
}
