/**
 * FakeUpstream: someone working on the fake GitHub's repository while an
 * import follows it. Each method changes `fake.project` as GitHub would (so
 * the REST API answers the new state at once) and, with a webhook target,
 * POSTs the deliveries GitHub sends for that action, in GitHub's order (an
 * issue opened with a label: `issues.opened`, then `issues.labeled`).
 *
 *   const upstream = new FakeUpstream(fake, { url: `${base}/hooks/github`, secret });
 *   const { issue, deliveries } = await upstream.openIssue({ title: 'Crash', user: 'alice', labels: ['bug'] });
 *
 * This file has the issue and pull request side (issues, issue comments, pull
 * requests, reviews, review comments, review threads); the repository-wide
 * side and the delivery plumbing are in upstream-repo.ts.
 */
import type { Json } from './payloads.js';
import type { CommentRecord, IssueRecord, ReviewCommentRecord, ReviewRecord, ReviewState } from './project.js';
import * as m from './mutations.js';
import { RepoUpstream, type Act, type Planned, type Sent } from './upstream-repo.js';

export type { Act, Planned, Sent } from './upstream-repo.js';
export type { SentDelivery, WebhookTarget, BuiltDelivery } from './webhook-delivery.js';

export class FakeUpstream extends RepoUpstream {
  /** The event an issue or pull request is delivered as, with its object: `issues` + `issue`, or `pull_request` + `number` + `pull_request`. */
  private about(issue: IssueRecord): { event: string; fields: Record<string, Json> } {
    if (issue.pull) return { event: 'pull_request', fields: { number: issue.number, pull_request: this.webhooks.pull(issue) } };
    return { event: 'issues', fields: { issue: this.webhooks.issue(issue) } };
  }

  private onIssue(issue: IssueRecord, action: string, by: string, extra: Record<string, Json> = {}): Planned {
    const { event, fields } = this.about(issue);
    return this.one(event, action, by, { ...fields, ...extra });
  }

  // ---- issues (and pull requests through the issues endpoints) ----------------------------

  /** Opens an issue: `label.created` for labels new to the repository, `issues.opened`, then `labeled`, `assigned` and `milestoned` for what it was opened with. */
  async openIssue(input: { title: string; body?: string; user: string; labels?: string[]; assignees?: string[]; milestone?: number }, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    const fresh = (input.labels ?? []).filter((name) => this.project.label(name) === undefined);
    const issue = this.project.addIssue(input);
    const by = act?.by ?? input.user;
    // Labels new to the repository are created with the issue, as GitHub creates them.
    const planned = fresh.map((name) => this.one('label', 'created', by, { label: this.webhooks.label(this.project.label(name)!) }));
    planned.push(this.onIssue(issue, 'opened', by));
    for (const name of issue.labels) planned.push(this.onIssue(issue, 'labeled', by, { label: this.webhooks.label(this.project.label(name)!) }));
    for (const login of issue.assignees) planned.push(this.onIssue(issue, 'assigned', by, { assignee: this.webhooks.user(login) }));
    const milestone = this.project.milestone(issue.milestone);
    if (milestone) planned.push(this.onIssue(issue, 'milestoned', by, { milestone: this.webhooks.milestone(milestone) }));
    return { issue, ...(await this.emit(act, planned)) };
  }

  /** Edits an issue's title or body: `issues.edited` with `changes.title.from` / `changes.body.from`. */
  async editIssue(number: number, patch: { title?: string; body?: string | null }, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    const before = this.project.issue(number);
    if (before.pull) return this.editPull(number, patch, act).then(({ pull, ...sent }) => ({ issue: pull, ...sent }));
    const changes: Record<string, { from: unknown }> = {};
    if (patch.title !== undefined && patch.title !== before.title) changes.title = { from: before.title };
    if (patch.body !== undefined && patch.body !== before.body) changes.body = { from: before.body ?? '' };
    const by = act?.by ?? before.user;
    const issue = this.project.editIssue(number, { ...patch, by });
    return { issue, ...(await this.emit(act, [this.onIssue(issue, 'edited', by, { changes })])) };
  }

  /** Closes an issue (`issues.closed`) or a pull request without merging it (`pull_request.closed`, `merged: false`). */
  async closeIssue(number: number, act?: Act & { reason?: 'completed' | 'not_planned' }): Promise<{ issue: IssueRecord } & Sent> {
    const by = act?.by ?? this.project.issue(number).user;
    const issue = this.project.closeIssue(number, by, act?.reason);
    return { issue, ...(await this.emit(act, [this.onIssue(issue, 'closed', by)])) };
  }

  async reopenIssue(number: number, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    const by = act?.by ?? this.project.issue(number).user;
    const issue = this.project.reopenIssue(number, by);
    return { issue, ...(await this.emit(act, [this.onIssue(issue, 'reopened', by)])) };
  }

  /** Deletes an issue (not a pull request): `issues.deleted`; its number then answers 410, its comments and events are gone. */
  async deleteIssue(number: number, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    const issue = m.deleteIssue(this.project, number);
    return { issue, ...(await this.emit(act, [this.one('issues', 'deleted', this.admin(act), { issue: this.webhooks.issue(issue) })])) };
  }

  /** Adds a label (created in the repository when new) to an issue or pull request: `issues.labeled` / `pull_request.labeled`. */
  async labelIssue(number: number, name: string, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    const by = act?.by ?? this.project.issue(number).user;
    const known = this.project.label(name) !== undefined;
    const issue = this.project.addLabel(number, name, by);
    const planned: Planned[] = [];
    if (!known) planned.push(this.one('label', 'created', by, { label: this.webhooks.label(this.project.label(name)!) }));
    planned.push(this.onIssue(issue, 'labeled', by, { label: this.webhooks.label(this.project.label(name)!) }));
    return { issue, ...(await this.emit(act, planned)) };
  }

  async unlabelIssue(number: number, name: string, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    const by = act?.by ?? this.project.issue(number).user;
    const issue = m.unlabelIssue(this.project, number, name, by);
    return { issue, ...(await this.emit(act, [this.onIssue(issue, 'unlabeled', by, { label: this.webhooks.label(this.project.label(name)!) })])) };
  }

  // ---- issue comments (on issues and on pull requests) -------------------------------------

  /** Comments on an issue or pull request: `issue_comment.created`; the issue's `comments` and `updated_at` move. */
  async comment(number: number, body: string, act?: Act): Promise<{ comment: CommentRecord } & Sent> {
    const comment = this.project.comment(number, body, act?.by);
    return { comment, ...(await this.emit(act, [this.commentEvent(comment, 'created')])) };
  }

  async editComment(id: number, body: string, act?: Act): Promise<{ comment: CommentRecord } & Sent> {
    const from = this.project.commentById.get(id)?.body;
    const comment = this.project.editComment(id, body);
    return { comment, ...(await this.emit(act, [this.commentEvent(comment, 'edited', act?.by, { changes: { body: { from } } })])) };
  }

  /** Deletes an issue comment: `issue_comment.deleted`; the issue's `comments` drops, its `updated_at` stays. */
  async deleteComment(id: number, act?: Act): Promise<{ comment: CommentRecord } & Sent> {
    const comment = m.deleteComment(this.project, id);
    return { comment, ...(await this.emit(act, [this.commentEvent(comment, 'deleted', act?.by)])) };
  }

  private commentEvent(comment: CommentRecord, action: string, by = comment.user, extra: Record<string, Json> = {}): Planned {
    const issue = this.project.issue(comment.issue);
    return this.one('issue_comment', action, by, { ...extra, issue: this.webhooks.issue(issue), comment: this.webhooks.comment(comment) });
  }

  // ---- pull requests ---------------------------------------------------------------------

  /** Edits a pull request's title or body: `pull_request.edited` with `changes`. */
  async editPull(number: number, patch: { title?: string; body?: string | null }, act?: Act): Promise<{ pull: IssueRecord } & Sent> {
    const by = act?.by ?? this.project.issue(number).user;
    const { issue, changes } = m.editPull(this.project, number, { ...patch, by });
    return { pull: issue, ...(await this.emit(act, [this.onIssue(issue, 'edited', by, { changes })])) };
  }

  async closePull(number: number, act?: Act): Promise<{ pull: IssueRecord } & Sent> {
    const { issue, ...sent } = await this.closeIssue(number, act);
    return { pull: issue, ...sent };
  }

  async reopenPull(number: number, act?: Act): Promise<{ pull: IssueRecord } & Sent> {
    const { issue, ...sent } = await this.reopenIssue(number, act);
    return { pull: issue, ...sent };
  }

  /** Merges a pull request (a merge commit on main, in git too when the fake has git): `pull_request.closed` with `merged: true`. */
  async mergePull(number: number, act?: Act): Promise<{ pull: IssueRecord; sha: string } & Sent> {
    const by = this.admin(act);
    const sha = await this.fake.mergePull(number, by);
    const pull = this.project.issue(number);
    return { pull, sha, ...(await this.emit(act, [this.onIssue(pull, 'closed', by)])) };
  }

  labelPull(number: number, name: string, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    return this.labelIssue(number, name, act);
  }

  unlabelPull(number: number, name: string, act?: Act): Promise<{ issue: IssueRecord } & Sent> {
    return this.unlabelIssue(number, name, act);
  }

  // ---- reviews and review comments ---------------------------------------------------------

  /** Submits a review: `pull_request_review_comment.created` for each inline comment, then `pull_request_review.submitted`. */
  async submitReview(pull: number, input: { user: string; state: Exclude<ReviewState, 'DISMISSED'>; body?: string; comments?: { path: string; line: number; body: string; inReplyTo?: number }[] }, act?: Act): Promise<{ review: ReviewRecord; comments: ReviewCommentRecord[] } & Sent> {
    const made = this.project.addReview({ pull, ...input });
    const by = input.user;
    const planned = made.comments.map((c) => this.reviewCommentEvent(c, 'created', by));
    planned.push(this.one('pull_request_review', 'submitted', by, { review: this.webhooks.review(made.review), pull_request: this.webhooks.pull(this.project.issue(pull)) }));
    return { ...made, ...(await this.emit(act, planned)) };
  }

  /** Dismisses an approval or change request: `pull_request_review.dismissed` (its state `dismissed`). */
  async dismissReview(pull: number, reviewId: number, act?: Act): Promise<{ review: ReviewRecord } & Sent> {
    const review = m.dismissReview(this.project, pull, reviewId);
    const planned = this.one('pull_request_review', 'dismissed', this.admin(act), { review: this.webhooks.review(review), pull_request: this.webhooks.pull(this.project.issue(pull)) });
    return { review, ...(await this.emit(act, [planned])) };
  }

  /**
   * A single review comment (a reply when `inReplyTo` names a comment of the
   * thread). GitHub wraps it in a review of its own: `pull_request_review_comment.created`,
   * then `pull_request_review.submitted` (state `commented`); the pull request's
   * `review_comments` and `updated_at` move.
   */
  async createReviewComment(pull: number, input: { user: string; body: string; path?: string; line?: number; inReplyTo?: number }, act?: Act): Promise<{ comment: ReviewCommentRecord; review: ReviewRecord } & Sent> {
    const item = { path: input.path ?? 'src/widget.txt', line: input.line ?? 1, body: input.body, inReplyTo: input.inReplyTo };
    const { review, comments } = await this.submitReview(pull, { user: input.user, state: 'COMMENTED', comments: [item] }, { ...act, deliver: false });
    const comment = comments[0] as ReviewCommentRecord;
    const planned = [
      this.reviewCommentEvent(comment, 'created', input.user),
      this.one('pull_request_review', 'submitted', input.user, { review: this.webhooks.review(review), pull_request: this.webhooks.pull(this.project.issue(pull)) }),
    ];
    return { comment, review, ...(await this.emit(act, planned)) };
  }

  async editReviewComment(id: number, body: string, act?: Act): Promise<{ comment: ReviewCommentRecord } & Sent> {
    const { comment, changes } = m.editReviewComment(this.project, id, body);
    return { comment, ...(await this.emit(act, [this.reviewCommentEvent(comment, 'edited', act?.by ?? comment.user, { changes })])) };
  }

  /** Deletes a review comment: `pull_request_review_comment.deleted`; the pull request's `review_comments` drops. */
  async deleteReviewComment(id: number, act?: Act): Promise<{ comment: ReviewCommentRecord } & Sent> {
    const comment = m.deleteReviewComment(this.project, id);
    return { comment, ...(await this.emit(act, [this.reviewCommentEvent(comment, 'deleted', act?.by ?? comment.user)])) };
  }

  /** Resolves the thread of a review comment: `pull_request_review_thread.resolved` with the thread's comments. */
  resolveThread(commentId: number, act?: Act): Promise<{ thread: { root: ReviewCommentRecord; comments: ReviewCommentRecord[] } } & Sent> {
    return this.threadEvent(commentId, true, act);
  }

  unresolveThread(commentId: number, act?: Act): Promise<{ thread: { root: ReviewCommentRecord; comments: ReviewCommentRecord[] } } & Sent> {
    return this.threadEvent(commentId, false, act);
  }

  private async threadEvent(commentId: number, resolved: boolean, act?: Act): Promise<{ thread: { root: ReviewCommentRecord; comments: ReviewCommentRecord[] } } & Sent> {
    const thread = m.setThreadResolved(this.project, commentId, resolved);
    const fields = { pull_request: this.webhooks.pull(this.project.issue(thread.root.pull)), thread: this.webhooks.thread(thread.root, thread.comments) };
    return { thread, ...(await this.emit(act, [this.one('pull_request_review_thread', resolved ? 'resolved' : 'unresolved', this.admin(act), fields)])) };
  }

  private reviewCommentEvent(comment: ReviewCommentRecord, action: string, by: string, extra: Record<string, Json> = {}): Planned {
    return this.one('pull_request_review_comment', action, by, { ...extra, comment: this.webhooks.reviewComment(comment), pull_request: this.webhooks.pull(this.project.issue(comment.pull)) });
  }
}
