import { obj, arr, str, int, orNull, enabled, userUrl, teamUrl, userUrls, teamUrls, type Json, type MappingContext } from './map-common.js';

/*
 * The repository-level records of a migration archive: the repository (with
 * its labels and collaborators embedded), labels, users, the organization,
 * teams, milestones and protected branches. Fields, order and encodings
 * follow GitHub's exporter (ghe-migrator, the Migrations API); where the REST
 * data has nothing for a field, it is empty rather than invented.
 */

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
