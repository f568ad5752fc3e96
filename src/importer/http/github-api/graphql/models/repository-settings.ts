import { listConnection, type PageArgs } from '../connection.js';
import type { Json } from '../context.js';
import { RepositoryModel } from './repository.js';

/*
 * A repository's scalar fields, each from its REST counterpart (GitHub's
 * REST and GraphQL name the same settings differently), and the fields
 * about the viewer, answered for a reader who may only read.
 */

const EPOCH = '1970-01-01T00:00:00Z';

const bool = (value: unknown, fallback: boolean) => (typeof value === 'boolean' ? value : fallback);

/** The scalar fields of a repository from its REST JSON, named as GraphQL names them. */
export function repositorySettings(json: Json): Record<string, unknown> {
  const owner = (json.owner ?? {}) as Json;
  const topics = Array.isArray(json.topics) ? (json.topics as string[]) : [];
  const license = json.license as Json | null | undefined;
  return {
    databaseId: typeof json.id === 'number' ? json.id : null,
    name: String(json.name ?? ''),
    nameWithOwner: String(json.full_name ?? ''),
    description: (json.description as string | null | undefined) ?? null,
    homepageUrl: json.homepage || null,
    url: String(json.html_url ?? ''),
    sshUrl: String(json.ssh_url ?? ''),
    mirrorUrl: (json.mirror_url as string | null | undefined) ?? null,
    securityPolicyUrl: null,
    openGraphImageUrl: `https://opengraph.githubassets.com/1/${String(json.full_name ?? '')}`,
    usesCustomOpenGraphImage: false,
    createdAt: String(json.created_at ?? EPOCH),
    pushedAt: (json.pushed_at as string | null | undefined) ?? null,
    updatedAt: String(json.updated_at ?? json.created_at ?? EPOCH),
    hasIssuesEnabled: bool(json.has_issues, true),
    hasProjectsEnabled: bool(json.has_projects, true),
    hasWikiEnabled: bool(json.has_wiki, true),
    hasDiscussionsEnabled: bool(json.has_discussions, false),
    mergeCommitAllowed: bool(json.allow_merge_commit, true),
    squashMergeAllowed: bool(json.allow_squash_merge, true),
    rebaseMergeAllowed: bool(json.allow_rebase_merge, true),
    autoMergeAllowed: bool(json.allow_auto_merge, false),
    deleteBranchOnMerge: bool(json.delete_branch_on_merge, false),
    forkCount: Number(json.forks_count ?? 0),
    stargazerCount: Number(json.stargazers_count ?? 0),
    diskUsage: typeof json.size === 'number' ? json.size : null,
    isArchived: bool(json.archived, false),
    isDisabled: bool(json.disabled, false),
    isEmpty: json.size === 0,
    isFork: bool(json.fork, false),
    isInOrganization: owner.type === 'Organization',
    isLocked: false,
    isMirror: typeof json.mirror_url === 'string',
    isPrivate: bool(json.private, false),
    isTemplate: bool(json.is_template, false),
    isBlankIssuesEnabled: true,
    isSecurityPolicyEnabled: false,
    isUserConfigurationRepository: String(json.name ?? '').toLowerCase() === String(owner.login ?? '').toLowerCase(),
    visibility: typeof json.visibility === 'string' ? json.visibility.toUpperCase() : json.private ? 'PRIVATE' : 'PUBLIC',
    viewerCanAdminister: false,
    viewerDefaultCommitEmail: null,
    viewerDefaultMergeMethod: 'MERGE',
    viewerHasStarred: false,
    viewerPermission: 'READ',
    viewerPossibleCommitEmails: [],
    viewerSubscription: 'UNSUBSCRIBED',
    licenseInfo: license ? { id: String(license.node_id ?? ''), key: String(license.key ?? ''), name: String(license.name ?? ''), nickname: null, spdxId: license.spdx_id ?? null, url: license.url ?? null } : null,
    primaryLanguage: typeof json.language === 'string' ? { id: `LANG_${json.language}`, name: json.language, color: null } : null,
    languages: () => ({ edges: [], nodes: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null }, totalCount: 0, totalSize: 0 }),
    repositoryTopics: (args: PageArgs) => listConnection(topics.map((name) => ({ id: `RT_${name}`, topic: { id: `TOPIC_${name}`, name }, url: `https://github.com/topics/${name}` })), args),
    codeOfConduct: null,
    contactLinks: [],
    fundingLinks: [],
    issueTemplates: [],
    pullRequestTemplates: [],
    parent: json.parent ? new RepositoryModel(json.parent as Json, null) : null,
    templateRepository: json.template_repository ? new RepositoryModel(json.template_repository as Json, null) : null,
    defaultBranchRef: typeof json.default_branch === 'string' ? { id: `REF_${json.default_branch}`, name: json.default_branch, prefix: 'refs/heads/', target: null } : null,
  };
}
