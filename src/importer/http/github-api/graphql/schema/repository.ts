/*
 * Repository, its labels, milestones and releases, and the few small types
 * gh's `repo view --json` asks for (license, language, topics, templates).
 * GitHub's names and nullability.
 */
export const REPOSITORY_SDL = /* GraphQL */ `
type Repository implements Node & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  name: String!
  nameWithOwner: String!
  owner: RepositoryOwner!
  description: String
  homepageUrl: URI
  url: URI!
  sshUrl: String!
  resourcePath: URI!
  mirrorUrl: URI
  securityPolicyUrl: URI
  openGraphImageUrl: URI!
  usesCustomOpenGraphImage: Boolean!
  createdAt: DateTime!
  pushedAt: DateTime
  updatedAt: DateTime!
  hasIssuesEnabled: Boolean!
  hasProjectsEnabled: Boolean!
  hasWikiEnabled: Boolean!
  hasDiscussionsEnabled: Boolean!
  mergeCommitAllowed: Boolean!
  squashMergeAllowed: Boolean!
  rebaseMergeAllowed: Boolean!
  autoMergeAllowed: Boolean!
  deleteBranchOnMerge: Boolean!
  forkCount: Int!
  stargazerCount: Int!
  diskUsage: Int
  isArchived: Boolean!
  isDisabled: Boolean!
  isEmpty: Boolean!
  isFork: Boolean!
  isInOrganization: Boolean!
  isLocked: Boolean!
  isMirror: Boolean!
  isPrivate: Boolean!
  isTemplate: Boolean!
  isBlankIssuesEnabled: Boolean!
  isSecurityPolicyEnabled: Boolean
  isUserConfigurationRepository: Boolean!
  visibility: RepositoryVisibility!
  viewerCanAdminister: Boolean!
  viewerDefaultCommitEmail: String
  viewerDefaultMergeMethod: PullRequestMergeMethod!
  viewerHasStarred: Boolean!
  viewerPermission: RepositoryPermission
  viewerPossibleCommitEmails: [String!]
  viewerSubscription: SubscriptionState
  licenseInfo: License
  primaryLanguage: Language
  languages(first: Int, last: Int, after: String, before: String): LanguageConnection
  repositoryTopics(first: Int, last: Int, after: String, before: String): RepositoryTopicConnection!
  codeOfConduct: CodeOfConduct
  contactLinks: [RepositoryContactLink!]
  fundingLinks: [FundingLink!]!
  issueTemplates: [IssueTemplate!]
  pullRequestTemplates: [PullRequestTemplate!]
  parent: Repository
  templateRepository: Repository
  defaultBranchRef: Ref
  watchers(first: Int, last: Int, after: String, before: String): UserConnection!
  assignableUsers(first: Int, last: Int, after: String, before: String, query: String): UserConnection!
  mentionableUsers(first: Int, last: Int, after: String, before: String, query: String): UserConnection!
  projects(first: Int, last: Int, after: String, before: String, states: [ProjectState!], search: String): ProjectConnection!
  labels(first: Int, last: Int, after: String, before: String, orderBy: LabelOrder = {field: CREATED_AT, direction: ASC}, query: String): LabelConnection
  label(name: String!): Label
  milestones(first: Int, last: Int, after: String, before: String, states: [MilestoneState!], orderBy: MilestoneOrder, query: String): MilestoneConnection
  milestone(number: Int!): Milestone
  releases(first: Int, last: Int, after: String, before: String, orderBy: ReleaseOrder): ReleaseConnection!
  release(tagName: String!): Release
  latestRelease: Release
  issues(first: Int, last: Int, after: String, before: String, states: [IssueState!], labels: [String!], orderBy: IssueOrder, filterBy: IssueFilters): IssueConnection!
  issue(number: Int!): Issue
  pullRequests(first: Int, last: Int, after: String, before: String, states: [PullRequestState!], labels: [String!], headRefName: String, baseRefName: String, orderBy: IssueOrder): PullRequestConnection!
  pullRequest(number: Int!): PullRequest
  issueOrPullRequest(number: Int!): IssueOrPullRequest
}

union IssueOrPullRequest = Issue | PullRequest

type License implements Node {
  id: ID!
  key: String!
  name: String!
  nickname: String
  spdxId: String
  url: URI
}

type Language implements Node {
  id: ID!
  name: String!
  color: String
}

type LanguageEdge {
  cursor: String!
  node: Language!
  size: Int!
}

type LanguageConnection {
  edges: [LanguageEdge]
  nodes: [Language]
  pageInfo: PageInfo!
  totalCount: Int!
  totalSize: Int!
}

type Topic implements Node {
  id: ID!
  name: String!
}

type RepositoryTopic implements Node {
  id: ID!
  topic: Topic!
  url: URI!
}

type CodeOfConduct implements Node {
  id: ID!
  key: String!
  name: String!
  body: String
  url: URI
}

type RepositoryContactLink {
  about: String!
  name: String!
  url: URI!
}

type FundingLink {
  platform: String!
  url: URI!
}

type IssueTemplate {
  about: String
  body: String
  name: String!
  title: String
}

type PullRequestTemplate {
  body: String
  filename: String
}

type Ref implements Node {
  id: ID!
  name: String!
  prefix: String!
  target: Commit
}

type Project implements Node {
  id: ID!
  name: String!
  number: Int!
  body: String
  resourcePath: URI!
  url: URI!
  state: ProjectState!
}

type ProjectColumn implements Node {
  id: ID!
  name: String!
}

type ProjectCard implements Node {
  id: ID!
  project: Project!
  column: ProjectColumn
}

type ProjectV2 implements Node {
  id: ID!
  title: String!
  number: Int!
  url: URI!
}

type ProjectV2Item implements Node {
  id: ID!
  project: ProjectV2!
}

type Label implements Node {
  id: ID!
  name: String!
  color: String!
  description: String
  isDefault: Boolean!
  url: URI!
  resourcePath: URI!
  createdAt: DateTime
  updatedAt: DateTime
}

type Milestone implements Node & UniformResourceLocatable {
  id: ID!
  number: Int!
  title: String!
  description: String
  dueOn: DateTime
  state: MilestoneState!
  closed: Boolean!
  closedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  creator: Actor
  progressPercentage: Float!
  url: URI!
  resourcePath: URI!
}

type Release implements Node & UniformResourceLocatable & Reactable {
  id: ID!
  databaseId: Int
  name: String
  tagName: String!
  description: String
  isDraft: Boolean!
  isPrerelease: Boolean!
  isLatest: Boolean!
  createdAt: DateTime!
  publishedAt: DateTime
  updatedAt: DateTime!
  author: User
  url: URI!
  resourcePath: URI!
  releaseAssets(first: Int, last: Int, after: String, before: String, name: String): ReleaseAssetConnection!
  reactionGroups: [ReactionGroup!]
}

type ReleaseAsset implements Node {
  id: ID!
  name: String!
  contentType: String!
  size: Int!
  downloadCount: Int!
  downloadUrl: URI!
  url: URI!
  createdAt: DateTime!
  updatedAt: DateTime!
  uploadedBy: User!
  release: Release
}
`;
