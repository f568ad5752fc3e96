/**
 * The fake GitHub's in-memory project model: one repository with its users,
 * labels, milestones, issues and pull requests (one number space), comments,
 * review comments in threads, reviews, issue events, releases with assets,
 * collaborators, protected branches, attachments referenced from bodies, and
 * the commits the git layer turns into real repositories.
 *
 * Records are small plain objects; the server builds GitHub payloads from them
 * lazily per request (see payloads.ts). Ids grow with time within each type and
 * timestamps are whole seconds, strictly increasing across the whole project.
 * Bodies may contain `{{web}}` (the web host's origin) and `{{foreign}}` (the
 * foreign attachment host), substituted when rendered.
 *
 * Builders for whole projects (`FakeProject.small()`, `generateProject()`) are
 * in generate.ts.
 */
import { createHash } from 'node:crypto';
import {
  GHOST,
  type State,
  type UserRecord,
  type TeamRecord,
  type LabelRecord,
  type MilestoneRecord,
  type PullInfo,
  type IssueRecord,
  type CommentRecord,
  type ReviewCommentRecord,
  type ReviewState,
  type ReviewRecord,
  type EventKind,
  type EventRecord,
  type AssetRecord,
  type ReleaseRecord,
  type Permission,
  type CollaboratorRecord,
  type ProtectionSettings,
  type BranchRecord,
  type AttachmentRecord,
  type GitCommit,
  type ExpectedCounts,
  type Expected,
  type RepoRecord,
} from './records.js';

export * from './records.js';
// generate.ts imports this module too; smallProject is only used when called.
import { smallProject } from './generate.js';

const ATTACHMENT_REF = /\{\{web\}\}(\/[^\s)"'\]]+)/g;

export class FakeProject {
  readonly repo: RepoRecord;
  readonly users = new Map<string, UserRecord>();
  readonly teams: TeamRecord[] = [];
  readonly labels: LabelRecord[] = [];
  readonly milestones: MilestoneRecord[] = [];
  /** Issues and pull requests in number order (= creation order). */
  readonly issues: IssueRecord[] = [];
  readonly pulls: IssueRecord[] = [];
  readonly comments: CommentRecord[] = [];
  readonly reviewComments: ReviewCommentRecord[] = [];
  readonly reviews: ReviewRecord[] = [];
  readonly events: EventRecord[] = [];
  readonly releases: ReleaseRecord[] = [];
  readonly collaborators: CollaboratorRecord[] = [];
  readonly branches: BranchRecord[] = [];
  readonly attachments = new Map<string, AttachmentRecord>();
  /** Commits of the default branch, oldest first (regular ones and merges of pull requests). */
  readonly mainHistory: GitCommit[] = [];
  readonly wikiHistory: GitCommit[] = [];
  /** Real commit ids, filled by the git layer; `shaOf` falls back to a stable made-up id. */
  readonly shas = new Map<string, string>();
  /** Bumped on every change; list caches key on it. */
  version = 0;
  /** Last timestamp handed out (ms, whole seconds). */
  clock: number;
  /** Mutations after generation are stamped max(clock + 1 s, now) so `since` from wall-clock time works. */
  wallClock = true;
  /** The highest issue and milestone numbers handed out: GitHub never reuses the number of a deleted one. */
  highestNumber = 0;
  highestMilestone = 0;
  /** Earlier `owner/name`s (lower case) of a renamed or transferred repository: the API answers them 301. */
  readonly formerNames: string[] = [];
  /** Review threads marked resolved, by their first comment's id. */
  readonly resolvedThreads = new Set<number>();

  readonly byNumber = new Map<number, IssueRecord>();
  readonly commentsByIssue = new Map<number, CommentRecord[]>();
  readonly reviewCommentsByPull = new Map<number, ReviewCommentRecord[]>();
  readonly reviewsByPull = new Map<number, ReviewRecord[]>();
  readonly eventsByIssue = new Map<number, EventRecord[]>();
  readonly commentById = new Map<number, CommentRecord>();
  readonly reviewCommentById = new Map<number, ReviewCommentRecord>();
  private readonly ids = { user: 583231, label: 208045946, milestone: 1002604, issue: 1000000001, pull: 2000000001, comment: 3000000001, reviewComment: 4000000001, review: 5000000001, event: 6000000001, release: 70000001, asset: 80000001, team: 4001, rule: 9000001 };
  private readonly listeners = new Set<(change: string) => void>();

  /** The small hand-shaped project (see generate.ts `smallProject`). */
  static small(): FakeProject {
    return smallProject();
  }

  constructor(options: { owner: string; name: string; description?: string; hasWiki?: boolean; defaultBranch?: string; start?: number; repoId?: number }) {
    this.clock = options.start ?? Date.UTC(2021, 0, 4, 9, 0, 0);
    this.repo = {
      id: options.repoId ?? 470000123,
      owner: options.owner,
      name: options.name,
      description: options.description ?? `${options.name}: a project served by the fake GitHub`,
      hasWiki: options.hasWiki ?? true,
      defaultBranch: options.defaultBranch ?? 'main',
      createdAt: this.clock,
      updatedAt: this.clock,
      pushedAt: this.clock,
    };
    this.users.set(options.owner, { login: options.owner, id: this.ids.user++, type: 'Organization', name: options.owner, deleted: false, siteAdmin: false, createdAt: this.clock });
  }

  // ---- time and ids -------------------------------------------------------

  /** Advances the clock by `seconds` (at least 1) and returns the new time. */
  advance(seconds = 1): number {
    this.clock += Math.max(1, Math.round(seconds)) * 1000;
    return this.clock;
  }

  /** The time of a mutation: strictly after everything so far, and not before the wall clock (when `wallClock`). */
  mutationTime(): number {
    const next = this.clock + 1000;
    this.clock = this.wallClock ? Math.max(next, Math.floor(Date.now() / 1000) * 1000) : next;
    return this.clock;
  }

  nextId(kind: keyof FakeProject['ids']): number {
    return this.ids[kind]++;
  }

  /** The commit id for a sha key: the real one once the git layer made it, else a stable made-up one. */
  shaOf(key: string): string {
    return this.shas.get(key) ?? createHash('sha1').update(`${this.repo.owner}/${this.repo.name}:${key}`).digest('hex');
  }

  /** Called with a change kind after every mutation (the server's caches and git layer listen). */
  onChange(listener: (change: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  touch(change: string): void {
    this.version++;
    for (const listener of this.listeners) listener(change);
  }

  // ---- lookups -----------------------------------------------------------

  /** The user a login renders as: deleted accounts (and unknown logins) as `ghost`. */
  displayUser(login: string): UserRecord {
    const user = this.users.get(login);
    return user === undefined || user.deleted ? GHOST : user;
  }

  /** The profile `/users/{login}` serves, or undefined (404). */
  profile(login: string): UserRecord | undefined {
    const user = this.users.get(login) ?? [...this.users.values()].find((u) => u.login.toLowerCase() === login.toLowerCase());
    return user === undefined || user.deleted ? undefined : user;
  }

  label(name: string): LabelRecord | undefined {
    return this.labels.find((l) => l.name === name);
  }

  milestone(number: number | null): MilestoneRecord | undefined {
    return number === null ? undefined : this.milestones.find((m) => m.number === number);
  }

  team(slug: string): TeamRecord | undefined {
    return this.teams.find((t) => t.slug === slug);
  }

  issue(number: number): IssueRecord {
    const issue = this.byNumber.get(number);
    if (issue === undefined) throw new Error(`no issue #${number}`);
    return issue;
  }

  mainTipKey(): string {
    const tip = this.mainHistory.at(-1);
    if (tip === undefined) throw new Error('the main history is empty');
    return tip.key;
  }

  // ---- building blocks (explicit times; used by the generators) -----------

  createUser(login: string, options: Partial<Omit<UserRecord, 'login'>> = {}): UserRecord {
    const user: UserRecord = { login, id: options.id ?? this.ids.user++, type: options.type ?? 'User', name: options.name ?? login, deleted: options.deleted ?? false, siteAdmin: options.siteAdmin ?? false, createdAt: options.createdAt ?? this.clock };
    this.users.set(login, user);
    return user;
  }

  createTeam(slug: string, name: string, permission = 'push'): TeamRecord {
    const team = { id: this.ids.team++, slug, name, description: `The ${name} team`, permission };
    this.teams.push(team);
    return team;
  }

  createLabel(name: string, color: string, description: string | null = null, isDefault = false): LabelRecord {
    const existing = this.label(name);
    if (existing) return existing;
    const label = { id: this.ids.label++, name, color, description, isDefault };
    this.labels.push(label);
    return label;
  }

  createMilestone(input: { title: string; description?: string | null; creator: string; state?: State; dueOn?: number | null; at?: number }): MilestoneRecord {
    const at = input.at ?? this.advance();
    const milestone: MilestoneRecord = { id: this.ids.milestone++, number: ++this.highestMilestone, title: input.title, description: input.description ?? null, state: input.state ?? 'open', creator: input.creator, createdAt: at, updatedAt: at, closedAt: input.state === 'closed' ? at : null, dueOn: input.dueOn ?? null };
    this.milestones.push(milestone);
    return milestone;
  }

  addCommit(input: { message: string; author: string; at?: number; files?: { path: string; content: string }[] }): GitCommit {
    const at = input.at ?? this.advance();
    const commit: GitCommit = { key: `main:${this.mainHistory.length}`, message: input.message, author: input.author, at, files: input.files ?? [{ path: `history/${Math.floor(this.mainHistory.length / 100)}/${this.mainHistory.length}.txt`, content: `${input.message}\n` }] };
    this.mainHistory.push(commit);
    this.repo.pushedAt = at;
    return commit;
  }

  addEvent(issue: IssueRecord, event: EventKind, actor: string, at: number, extra: Partial<EventRecord> = {}): EventRecord {
    const record: EventRecord = { id: this.ids.event++, issue: issue.number, event, actor, createdAt: at, commit: null, ...extra };
    this.events.push(record);
    push(this.eventsByIssue, issue.number, record);
    issue.updatedAt = Math.max(issue.updatedAt, at);
    return record;
  }

  createIssue(input: {
    title: string; body?: string | null; user: string; labels?: string[]; assignees?: string[]; milestone?: number | null; at?: number;
    pull?: { headRef?: string; draft?: boolean; requestedReviewers?: string[]; requestedTeams?: string[]; additions?: number; deletions?: number };
  }): IssueRecord {
    const at = input.at ?? this.advance();
    const number = ++this.highestNumber;
    const issue: IssueRecord = {
      id: input.pull ? this.ids.pull++ : this.ids.issue++, number, title: input.title, body: input.body ?? null, user: input.user, state: 'open', stateReason: null,
      labels: [], assignees: [], milestone: null, locked: false, lockReason: null, createdAt: at, updatedAt: at, closedAt: null, closedBy: null, comments: 0, pull: null,
    };
    if (input.pull) {
      issue.pull = {
        id: this.ids.pull - 1 + 500000000, headRef: input.pull.headRef ?? `feature/${number}-${slug(input.title)}`, baseRef: this.repo.defaultBranch, baseKey: this.mainTipKey(),
        draft: input.pull.draft ?? false, merged: false, mergedAt: null, mergedBy: null, requestedReviewers: [], requestedTeams: [],
        additions: input.pull.additions ?? 10, deletions: input.pull.deletions ?? 2, changedFiles: 1, commits: 1, branchExists: true,
      };
    }
    this.issues.push(issue);
    if (issue.pull) this.pulls.push(issue);
    this.byNumber.set(number, issue);
    for (const name of input.labels ?? []) this.labelIssue(issue, name, input.user, at);
    for (const login of input.assignees ?? []) this.assignIssue(issue, login, input.user, at);
    if (input.milestone != null) this.setMilestone(issue, input.milestone, input.user, at);
    for (const login of input.pull?.requestedReviewers ?? []) this.requestReview(issue, { user: login }, input.user, at);
    for (const team of input.pull?.requestedTeams ?? []) this.requestReview(issue, { team }, input.user, at);
    return issue;
  }

  labelIssue(issue: IssueRecord, name: string, actor: string, at: number): void {
    const label = this.label(name) ?? this.createLabel(name, 'ededed');
    if (issue.labels.includes(name)) return;
    issue.labels.push(name);
    this.addEvent(issue, 'labeled', actor, at, { label: { name: label.name, color: label.color } });
  }

  assignIssue(issue: IssueRecord, login: string, actor: string, at: number): void {
    if (issue.assignees.includes(login)) return;
    issue.assignees.push(login);
    this.addEvent(issue, 'assigned', actor, at, { assignee: login });
  }

  setMilestone(issue: IssueRecord, number: number, actor: string, at: number): void {
    const milestone = this.milestone(number);
    if (!milestone) throw new Error(`no milestone ${number}`);
    issue.milestone = number;
    this.addEvent(issue, 'milestoned', actor, at, { milestone: milestone.title });
  }

  requestReview(issue: IssueRecord, who: { user?: string; team?: string }, actor: string, at: number): void {
    const pull = pullOf(issue);
    if (who.user !== undefined && !pull.requestedReviewers.includes(who.user)) pull.requestedReviewers.push(who.user);
    if (who.team !== undefined && !pull.requestedTeams.includes(who.team)) pull.requestedTeams.push(who.team);
    this.addEvent(issue, 'review_requested', actor, at, who.user !== undefined ? { requestedReviewer: who.user } : { requestedTeam: who.team as string });
  }

  addComment(number: number, input: { user: string; body: string; at?: number }): CommentRecord {
    const issue = this.issue(number);
    const at = input.at ?? this.advance();
    const comment: CommentRecord = { id: this.ids.comment++, issue: number, user: input.user, body: input.body, createdAt: at, updatedAt: at };
    this.comments.push(comment);
    this.commentById.set(comment.id, comment);
    push(this.commentsByIssue, number, comment);
    issue.comments++;
    issue.updatedAt = Math.max(issue.updatedAt, at);
    return comment;
  }

  /** A submitted review with optional inline comments (replies name the comment they answer). */
  submitReview(number: number, input: { user: string; state: ReviewState; body?: string; at?: number; comments?: { path: string; line: number; body: string; inReplyTo?: number }[] }): { review: ReviewRecord; comments: ReviewCommentRecord[] } {
    const issue = this.issue(number);
    const pull = pullOf(issue);
    // Inline comments first (a second apart), then the review's submission.
    let at = input.at ?? this.advance();
    const review: ReviewRecord = { id: this.ids.review++, pull: number, user: input.user, body: input.body ?? '', state: input.state, submittedAt: at };
    this.reviews.push(review);
    push(this.reviewsByPull, number, review);
    const made: ReviewCommentRecord[] = [];
    for (const [index, item] of (input.comments ?? []).entries()) {
      if (index > 0) at = this.advance();
      const parent = item.inReplyTo === undefined ? undefined : this.reviewCommentById.get(item.inReplyTo);
      const comment: ReviewCommentRecord = {
        id: this.ids.reviewComment++, pull: number, reviewId: review.id, inReplyTo: parent ? (parent.inReplyTo ?? parent.id) : null, user: input.user, body: item.body,
        path: parent?.path ?? item.path, line: parent?.line ?? item.line, side: 'RIGHT', createdAt: at, updatedAt: at,
      };
      this.reviewComments.push(comment);
      this.reviewCommentById.set(comment.id, comment);
      push(this.reviewCommentsByPull, number, comment);
      made.push(comment);
    }
    if (made.length > 0) review.submittedAt = at = this.advance();
    pull.requestedReviewers = pull.requestedReviewers.filter((login) => login !== input.user);
    issue.updatedAt = Math.max(issue.updatedAt, at);
    return { review, comments: made };
  }

  closeInternal(issue: IssueRecord, by: string, at: number, reason: 'completed' | 'not_planned' = 'completed'): void {
    issue.state = 'closed';
    issue.stateReason = issue.pull ? null : reason;
    issue.closedAt = at;
    issue.closedBy = by;
    if (issue.pull && !issue.pull.merged) issue.pull.branchExists = false;
    this.addEvent(issue, 'closed', by, at);
  }

  reopenInternal(issue: IssueRecord, by: string, at: number): void {
    issue.state = 'open';
    issue.stateReason = issue.pull ? null : 'reopened';
    issue.closedAt = null;
    issue.closedBy = null;
    this.addEvent(issue, 'reopened', by, at);
  }

  /** Merges: a merge commit on main, `merged` + `closed` (+ `head_ref_deleted`) events by the merger. */
  mergeInternal(issue: IssueRecord, by: string, at: number): GitCommit {
    const pull = pullOf(issue);
    if (pull.merged) throw new Error(`#${issue.number} is already merged`);
    const commit: GitCommit = { key: `pr:${issue.number}:merge`, message: `Merge pull request #${issue.number} from ${this.repo.owner}/${pull.headRef}\n\n${issue.title}`, author: by, at, mergeOf: issue.number, files: [] };
    this.mainHistory.push(commit);
    this.repo.pushedAt = at;
    pull.merged = true;
    pull.mergedAt = at;
    pull.mergedBy = by;
    this.addEvent(issue, 'merged', by, at, { commit: commit.key });
    this.closeInternal(issue, by, at);
    pull.branchExists = false;
    this.addEvent(issue, 'head_ref_deleted', by, at);
    return commit;
  }

  /** A release; a `draft` has no git tag and no published_at, and is listed only to a token (as GitHub lists drafts only to those with push access). */
  addRelease(input: { tag: string; name?: string; body?: string; author: string; prerelease?: boolean; draft?: boolean; at?: number; assets?: { name: string; contentType: string; size: number; label?: string | null; downloadCount?: number }[] }): ReleaseRecord {
    const at = input.at ?? this.advance();
    const draft = input.draft ?? false;
    const release: ReleaseRecord = {
      id: this.ids.release++, tag: input.tag, name: input.name ?? input.tag, body: input.body ?? `Release ${input.tag}`, author: input.author, draft, prerelease: input.prerelease ?? false,
      targetCommitish: this.repo.defaultBranch, commit: this.mainTipKey(), createdAt: at, publishedAt: draft ? null : at, assets: [],
    };
    for (const asset of input.assets ?? []) {
      release.assets.push({ id: this.ids.asset++, name: asset.name, label: asset.label ?? null, contentType: asset.contentType, size: asset.size, downloadCount: asset.downloadCount ?? 0, createdAt: at, updatedAt: at, uploader: input.author });
    }
    this.releases.push(release);
    return release;
  }

  addAttachment(record: AttachmentRecord): string {
    this.attachments.set(record.path, record);
    return `{{web}}${record.path}`;
  }

  // ---- mutations for incremental-sync tests (stamped "now") --------------

  addIssue(input: { title: string; body?: string; user: string; labels?: string[]; assignees?: string[]; milestone?: number }): IssueRecord {
    const issue = this.createIssue({ ...input, at: this.mutationTime() });
    this.repo.updatedAt = issue.createdAt;
    this.touch('issue');
    return issue;
  }

  comment(number: number, body: string, user?: string): CommentRecord {
    const issue = this.issue(number);
    const comment = this.addComment(number, { user: user ?? issue.user, body, at: this.mutationTime() });
    this.touch('comment');
    return comment;
  }

  editComment(id: number, body: string): CommentRecord {
    const comment = this.commentById.get(id);
    if (!comment) throw new Error(`no comment ${id}`);
    comment.body = body;
    comment.updatedAt = this.mutationTime();
    this.touch('comment');
    return comment;
  }

  /** Edits title/body/labels…; a title change adds a `renamed` event, as GitHub does. */
  editIssue(number: number, patch: { title?: string; body?: string | null; locked?: boolean; by?: string }): IssueRecord {
    const issue = this.issue(number);
    const at = this.mutationTime();
    const by = patch.by ?? issue.user;
    if (patch.title !== undefined && patch.title !== issue.title) {
      this.addEvent(issue, 'renamed', by, at, { rename: { from: issue.title, to: patch.title } });
      issue.title = patch.title;
    }
    if (patch.body !== undefined) issue.body = patch.body;
    if (patch.locked === true && !issue.locked) {
      issue.locked = true;
      issue.lockReason = 'resolved';
      this.addEvent(issue, 'locked', by, at, { lockReason: 'resolved' });
    }
    issue.updatedAt = at;
    this.touch('issue');
    return issue;
  }

  closeIssue(number: number, by?: string, reason: 'completed' | 'not_planned' = 'completed'): IssueRecord {
    const issue = this.issue(number);
    if (issue.state === 'closed') throw new Error(`#${number} is already closed`);
    this.closeInternal(issue, by ?? issue.user, this.mutationTime(), reason);
    this.touch('issue');
    return issue;
  }

  reopenIssue(number: number, by?: string): IssueRecord {
    const issue = this.issue(number);
    this.reopenInternal(issue, by ?? issue.user, this.mutationTime());
    this.touch('issue');
    return issue;
  }

  /** Adds a label to an issue (creating the repository label when new), with a `labeled` event. */
  addLabel(number: number, name: string, by?: string): IssueRecord {
    const issue = this.issue(number);
    this.labelIssue(issue, name, by ?? issue.user, this.mutationTime());
    this.touch('label');
    return issue;
  }

  /** Marks the pull request merged (merge commit key `pr:N:merge`; FakeGitHub.mergePull also writes it to git). */
  mergePull(number: number, by: string): IssueRecord {
    const issue = this.issue(number);
    this.mergeInternal(issue, by, this.mutationTime());
    this.touch('merge');
    return issue;
  }

  addReview(input: { pull: number; user: string; state: ReviewState; body?: string; comments?: { path: string; line: number; body: string; inReplyTo?: number }[] }): { review: ReviewRecord; comments: ReviewCommentRecord[] } {
    const made = this.submitReview(input.pull, { ...input, at: this.mutationTime() });
    this.touch('review');
    return made;
  }

  /** A new commit on main or in the wiki (the git layer writes it; see FakeGitHub.pushCommit). */
  recordPush(repo: 'main' | 'wiki', message: string, author?: string): GitCommit {
    const at = this.mutationTime();
    const login = author ?? this.collaborators[0]?.login ?? this.repo.owner;
    let commit: GitCommit;
    if (repo === 'main') {
      commit = this.addCommit({ message, author: login, at });
    } else {
      commit = { key: `wiki:${this.wikiHistory.length}`, message, author: login, at, files: [{ path: 'Home.md', content: `# Home\n\n${message}\n` }] };
      this.wikiHistory.push(commit);
    }
    this.touch('push');
    return commit;
  }

  // ---- what a complete import must contain ---------------------------------

  /** Every login a payload of the importable objects names (before ghost substitution). */
  private referencedLogins(): Set<string> {
    const logins = new Set<string>();
    const add = (login: string | null | undefined) => { if (login) logins.add(login); };
    for (const issue of this.issues) {
      add(issue.user);
      add(issue.closedBy);
      issue.assignees.forEach(add);
      if (issue.pull) {
        add(issue.pull.mergedBy);
        issue.pull.requestedReviewers.forEach(add);
      }
    }
    for (const c of this.comments) add(c.user);
    for (const c of this.reviewComments) add(c.user);
    for (const r of this.reviews) add(r.user);
    for (const e of this.events) { add(e.actor); add(e.assignee); add(e.requestedReviewer); }
    for (const c of this.collaborators) add(c.login);
    for (const r of this.releases) { add(r.author); r.assets.forEach((a) => add(a.uploader)); }
    for (const m of this.milestones) add(m.creator);
    return logins;
  }

  /** Bodies of every object (issues, PRs, comments, review comments, reviews, releases). */
  *bodies(): Iterable<string> {
    for (const i of this.issues) if (i.body) yield i.body;
    for (const c of this.comments) yield c.body;
    for (const c of this.reviewComments) yield c.body;
    for (const r of this.reviews) yield r.body;
    for (const r of this.releases) yield r.body;
  }

  expected(): Expected {
    const shown = new Set([...this.referencedLogins()].map((login) => this.displayUser(login).login));
    const users = [...shown].filter((login) => this.profile(login) !== undefined).sort();
    const missingUsers = [...shown].filter((login) => this.profile(login) === undefined).sort();
    const paths = new Set<string>();
    for (const body of this.bodies()) for (const match of body.matchAll(ATTACHMENT_REF)) if (this.attachments.has(match[1] as string)) paths.add(match[1] as string);
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    return {
      issue: this.issues.length - this.pulls.length,
      pull_request: this.pulls.length,
      note: this.comments.length,
      diff_note: this.reviewComments.length,
      pull_request_review: this.reviews.length,
      pull_request_review_request: sum(this.pulls.map((p) => pullOf(p).requestedReviewers.length + pullOf(p).requestedTeams.length)),
      pull_request_merged_by: this.pulls.filter((p) => pullOf(p).mergedBy !== null).length,
      issue_event: this.events.length,
      label: this.labels.length,
      milestone: this.milestones.length,
      // Drafts too: the importer lists releases with a token, and the fake's tokens have push access.
      release: this.releases.length,
      release_asset: sum(this.releases.map((r) => r.assets.length)),
      attachment: paths.size,
      collaborator: this.collaborators.length,
      protected_branch: this.branches.filter((b) => b.protection !== null).length,
      user: users.length,
      users,
      missingUsers,
      attachmentPaths: [...paths].sort(),
      collaboratorDirect: this.collaborators.filter((c) => c.direct).length,
    };
  }

  /**
   * The fewest API requests a complete import needs:
   *
   *   pages(n) = max(1, ceil(n / perPage))        (an empty list still costs one request)
   *   budget   = pages(issues + pulls)            GET /issues?state=all
   *            + pages(pulls)                     GET /pulls?state=all
   *            + pages(issue comments)            GET /issues/comments
   *            + pages(review comments)           GET /pulls/comments
   *            + pages(issue events)              GET /issues/events
   *            + pages(labels) + pages(milestones, state=all) + pages(releases)
   *            + pages(collaborators) + pages(direct) + pages(outside)   GET /collaborators?affiliation=all|direct|outside
   *            + pages(protected branches)        GET /branches?protected=true
   *            + pulls                            GET /pulls/{n}/reviews, one page each (≤ 100 reviews per PR assumed)
   *            + pulls                            GET /pulls/{n}, the single object (fields the list lacks: commits, mergeable, …)
   *            + protected branches               GET /branches/{b}/protection
   *            + 1                                GET /repos/{o}/{r}
   *            + distinct logins                  GET /users/{login}, incl. the ones answering 404 (`ghost`)
   *
   * Ignores the page cap (pageCapItems) of the three repo-wide comment/event
   * lists; /rate_limit calls are free on GitHub and not counted either.
   */
  budget(options: { perPage?: number } = {}): number {
    const perPage = options.perPage ?? 100;
    const pages = (n: number) => Math.max(1, Math.ceil(n / perPage));
    const e = this.expected();
    const protectedCount = e.protected_branch;
    return pages(this.issues.length) + pages(this.pulls.length) + pages(this.comments.length) + pages(this.reviewComments.length) + pages(this.events.length)
      + pages(this.labels.length) + pages(this.milestones.length) + pages(e.release) + pages(protectedCount)
      + pages(this.collaborators.length) + pages(e.collaboratorDirect) + pages(this.collaborators.filter((c) => c.direct && c.outside === true).length)
      + 2 * this.pulls.length + protectedCount + 1 + e.users.length + e.missingUsers.length;
  }
}

export function pullOf(issue: IssueRecord): PullInfo {
  if (!issue.pull) throw new Error(`#${issue.number} is not a pull request`);
  return issue.pull;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 30) || 'change';
}
