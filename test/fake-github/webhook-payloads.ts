/**
 * The bodies of GitHub's webhook deliveries for the fake's project: the
 * object a delivery is about rendered as the fake's REST API renders it
 * (payloads.ts), inside GitHub's envelope (`action`, `repository`,
 * `organization` for an organization's repository, `sender`), plus the few
 * differences GitHub's webhooks have from its REST answers (a review's state
 * in lower case, an issue's `draft`, a release's `discussion_url`, the
 * repository's `custom_properties`), so a
 * receiver sees what GitHub sends. The branch protection rule and the review
 * thread exist only in webhooks and are built here.
 */
import { createHash } from 'node:crypto';
import { nodeId, type Json, type Payloads } from './payloads.js';
import { iso, type BranchRecord, type CommentRecord, type FakeProject, type IssueRecord, type LabelRecord, type MilestoneRecord, type ReleaseRecord, type ReviewCommentRecord, type ReviewRecord } from './project.js';

export class WebhookPayloads {
  constructor(private readonly project: FakeProject, private readonly payloads: Payloads) {}

  /** A delivery's body: `action`, the event's own fields, then `repository`, `organization` (when an organization owns it) and `sender`, in GitHub's order. */
  envelope(action: string, sender: string, fields: Record<string, Json>): Json {
    const body: Json = { action, ...fields, repository: this.repository() };
    const owner = this.project.users.get(this.project.repo.owner);
    if (owner?.type === 'Organization') body.organization = this.organization();
    body.sender = this.payloads.user(sender);
    return body;
  }

  /** The repository as `GET /repos/{owner}/{repo}` answers, less the caller's `permissions` (a webhook has no caller), plus the two keys webhooks add. */
  repository(): Json {
    const repo = this.payloads.repository(true);
    delete repo.permissions;
    repo.web_commit_signoff_required ??= false;
    repo.custom_properties ??= {};
    return repo;
  }

  /** GitHub's short organization object of webhooks. */
  organization(): Json {
    const org = this.payloads.user(this.project.repo.owner);
    const api = `${this.payloads.hosts.apiUrl}/orgs/${org.login}`;
    return {
      login: org.login, id: org.id, node_id: org.node_id, url: api, repos_url: `${api}/repos`, events_url: `${api}/events`, hooks_url: `${api}/hooks`, issues_url: `${api}/issues`,
      members_url: `${api}/members{/member}`, public_members_url: `${api}/public_members{/member}`, avatar_url: org.avatar_url, description: null,
    };
  }

  user(login: string): Json {
    return this.payloads.user(login);
  }

  /** An issue (or a pull request seen as an issue) as `GET /issues/{n}` answers; webhooks also say `draft` for plain issues. */
  issue(issue: IssueRecord): Json {
    const o = this.payloads.issue(issue, 'single');
    if (o.draft === undefined) o.draft = false;
    return o;
  }

  pull(issue: IssueRecord): Json {
    return this.payloads.pull(issue, 'single', this.payloads.repository(false));
  }

  comment(c: CommentRecord): Json {
    return this.payloads.comment(c);
  }

  reviewComment(c: ReviewCommentRecord): Json {
    return this.payloads.reviewComment(c);
  }

  /** A review as the REST API renders it, its state in lower case as webhooks write it (`approved`, `dismissed`). */
  review(r: ReviewRecord): Json {
    const o = this.payloads.review(r);
    o.state = r.state.toLowerCase();
    return o;
  }

  /** A review thread: its node id and its comments, first comment first. */
  thread(root: ReviewCommentRecord, comments: readonly ReviewCommentRecord[]): Json {
    return { node_id: nodeId('PullRequestReviewThread', root.id), comments: comments.map((c) => this.payloads.reviewComment(c)) };
  }

  label(l: LabelRecord): Json {
    return this.payloads.label(l);
  }

  milestone(m: MilestoneRecord): Json {
    return this.payloads.milestone(m);
  }

  release(r: ReleaseRecord): Json {
    const o = this.payloads.release(r);
    if (o.discussion_url === undefined) o.discussion_url = null;
    if (o.reactions === undefined) o.reactions = this.payloads.reactions(o.url);
    return o;
  }

  /**
   * The branch protection rule behind a protected branch, as
   * `branch_protection_rule` webhooks show it (levels `off`, `non_admins`
   * or `everyone`). Generated projects' rules get a stable made-up id.
   */
  rule(b: BranchRecord): Json {
    const p = b.protection;
    if (p === null) throw new Error(`${b.name} is not protected`);
    const rule = b.rule ?? { id: 9_500_000 + Number.parseInt(createHash('sha1').update(b.name).digest('hex').slice(0, 5), 16), createdAt: this.project.repo.createdAt, updatedAt: this.project.repo.createdAt };
    const level = p.enforceAdmins ? 'everyone' : 'non_admins';
    const when = (on: boolean) => (on ? level : 'off');
    return {
      id: rule.id, repository_id: this.project.repo.id, name: b.name, created_at: iso(rule.createdAt), updated_at: iso(rule.updatedAt),
      pull_request_reviews_enforcement_level: when(p.requiredApprovals > 0), required_approving_review_count: p.requiredApprovals,
      dismiss_stale_reviews_on_push: p.dismissStaleReviews, require_code_owner_review: p.requireCodeOwners, authorized_dismissal_actors_only: false,
      ignore_approvals_from_contributors: false, required_status_checks: [...p.requiredStatusChecks], required_status_checks_enforcement_level: when(p.requiredStatusChecks.length > 0),
      strict_required_status_checks_policy: p.strict, signature_requirement_enforcement_level: 'off', linear_history_requirement_enforcement_level: when(p.linearHistory),
      admin_enforced: p.enforceAdmins, create_protected: false, allow_force_pushes_enforcement_level: p.allowForcePushes ? 'everyone' : 'off',
      allow_deletions_enforcement_level: p.allowDeletions ? 'everyone' : 'off', merge_queue_enforcement_level: 'off', required_deployments_enforcement_level: 'off',
      required_conversation_resolution_level: when(p.conversationResolution), authorized_actors_only: p.restrictions !== null,
      authorized_actor_names: p.restrictions === null ? [] : [...p.restrictions.users], require_last_push_approval: false,
    };
  }
}
