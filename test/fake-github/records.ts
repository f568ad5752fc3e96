/** Record types of the fake GitHub's project model (see project.ts). */

export type State = 'open' | 'closed';

export interface UserRecord {
  login: string;
  id: number;
  type: 'User' | 'Bot' | 'Organization';
  name: string;
  /** A deleted account: its content is shown as `ghost` and its profile answers 404. */
  deleted: boolean;
  siteAdmin: boolean;
  createdAt: number;
}

export interface TeamRecord {
  id: number;
  slug: string;
  name: string;
  description: string;
  permission: string;
}

export interface LabelRecord {
  id: number;
  name: string;
  color: string;
  description: string | null;
  isDefault: boolean;
}

export interface MilestoneRecord {
  id: number;
  number: number;
  title: string;
  description: string | null;
  state: State;
  creator: string;
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  dueOn: number | null;
}

export interface PullInfo {
  id: number;
  headRef: string;
  baseRef: string;
  /** Key (see `FakeProject.shaOf`) of the main commit the PR branched from. */
  baseKey: string;
  draft: boolean;
  merged: boolean;
  mergedAt: number | null;
  mergedBy: string | null;
  /** Pending review requests (GitHub drops a request once that reviewer reviews). */
  requestedReviewers: string[];
  requestedTeams: string[];
  additions: number;
  deletions: number;
  changedFiles: number;
  commits: number;
  /** Whether the head branch still exists (deleted after merge, or when closed). */
  branchExists: boolean;
}

export interface IssueRecord {
  id: number;
  number: number;
  title: string;
  body: string | null;
  user: string;
  state: State;
  stateReason: 'completed' | 'not_planned' | 'reopened' | null;
  labels: string[];
  assignees: string[];
  milestone: number | null;
  locked: boolean;
  lockReason: string | null;
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  closedBy: string | null;
  /** Number of issue comments (kept equal to the comment records of this number). */
  comments: number;
  pull: PullInfo | null;
}

export interface CommentRecord {
  id: number;
  issue: number;
  user: string;
  body: string;
  createdAt: number;
  updatedAt: number;
}

export interface ReviewCommentRecord {
  id: number;
  pull: number;
  reviewId: number | null;
  /** The thread's first comment (GitHub points every reply at the root). */
  inReplyTo: number | null;
  user: string;
  body: string;
  path: string;
  line: number;
  side: 'LEFT' | 'RIGHT';
  createdAt: number;
  updatedAt: number;
}

export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED';

export interface ReviewRecord {
  id: number;
  pull: number;
  user: string;
  body: string;
  state: ReviewState;
  submittedAt: number;
}

export type EventKind =
  | 'labeled' | 'unlabeled' | 'assigned' | 'unassigned' | 'milestoned' | 'demilestoned' | 'renamed'
  | 'closed' | 'reopened' | 'merged' | 'referenced' | 'head_ref_deleted' | 'review_requested' | 'locked';

export interface EventRecord {
  id: number;
  issue: number;
  event: EventKind;
  actor: string;
  createdAt: number;
  /** Sha key of the commit (merged, referenced), else null. */
  commit: string | null;
  label?: { name: string; color: string };
  assignee?: string;
  milestone?: string;
  requestedReviewer?: string;
  requestedTeam?: string;
  rename?: { from: string; to: string };
  lockReason?: string;
}

export interface AssetRecord {
  id: number;
  name: string;
  label: string | null;
  contentType: string;
  size: number;
  downloadCount: number;
  createdAt: number;
  updatedAt: number;
  uploader: string;
}

export interface ReleaseRecord {
  id: number;
  tag: string;
  name: string;
  body: string;
  author: string;
  draft: boolean;
  prerelease: boolean;
  targetCommitish: string;
  /** Sha key of the tagged commit. */
  commit: string;
  createdAt: number;
  /** Null for a draft (never published). */
  publishedAt: number | null;
  assets: AssetRecord[];
}

export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read';

export interface CollaboratorRecord {
  login: string;
  permission: Permission;
  /** false: access through organisation/team membership (not listed with `affiliation=direct`). */
  direct: boolean;
  /** true: a direct collaborator who is no member of the owning organisation (listed with `affiliation=outside` too). */
  outside?: boolean;
}

export interface ProtectionSettings {
  requiredStatusChecks: string[];
  strict: boolean;
  enforceAdmins: boolean;
  requiredApprovals: number;
  dismissStaleReviews: boolean;
  requireCodeOwners: boolean;
  linearHistory: boolean;
  allowForcePushes: boolean;
  allowDeletions: boolean;
  conversationResolution: boolean;
  restrictions: { users: string[]; teams: string[] } | null;
}

export interface BranchRecord {
  name: string;
  /** Sha key of the tip (`main` follows the main history). */
  commit: string;
  protection: ProtectionSettings | null;
  /** The branch protection rule behind `protection` (its id and times, as `branch_protection_rule` webhooks show them); absent for generated projects. */
  rule?: { id: number; createdAt: number; updatedAt: number };
}

export interface AttachmentRecord {
  /** Path on the web host, e.g. `/user-attachments/assets/<uuid>`. */
  path: string;
  name: string;
  contentType: string;
  size: number;
  /** When set, the web host answers 302 to this path (same host), which serves the bytes. */
  redirectTo: string | null;
}

export interface GitCommit {
  key: string;
  message: string;
  author: string;
  at: number;
  /** For merge commits on main: the merged pull request's number. */
  mergeOf?: number;
  files: { path: string; content: string }[];
}

export interface ExpectedCounts {
  issue: number;
  pull_request: number;
  note: number;
  diff_note: number;
  pull_request_review: number;
  pull_request_review_request: number;
  pull_request_merged_by: number;
  issue_event: number;
  label: number;
  milestone: number;
  release: number;
  release_asset: number;
  attachment: number;
  collaborator: number;
  protected_branch: number;
  user: number;
}

export interface Expected extends ExpectedCounts {
  /** Logins with a profile (`/users/{login}` answers 200), sorted. */
  users: string[];
  /** Logins appearing in payloads whose profile answers 404 (deleted accounts show as `ghost`), sorted. */
  missingUsers: string[];
  /** Distinct own-host attachment paths referenced from bodies (not the foreign link), sorted. */
  attachmentPaths: string[];
  /** Collaborators listed with `affiliation=direct`. */
  collaboratorDirect: number;
}

export const GHOST: UserRecord = { login: 'ghost', id: 10137, type: 'User', name: 'Deleted user', deleted: false, siteAdmin: false, createdAt: Date.UTC(2008, 4, 13) };

export interface RepoRecord {
  id: number;
  owner: string;
  name: string;
  description: string;
  hasWiki: boolean;
  defaultBranch: string;
  createdAt: number;
  updatedAt: number;
  pushedAt: number;
}

/** Whole seconds, ISO 8601 as GitHub writes it (`2011-04-14T16:00:49Z`). */
export function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
