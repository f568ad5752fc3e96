/*
 * The schema's root, scalars, enums, interfaces and shared types: a subset
 * of GitHub's public GraphQL schema (names, nullability and enum values as
 * GitHub's), enough for what the gh CLI asks. Connection and edge types are
 * generated (see connections.ts).
 */
export const ROOT_SDL = /* GraphQL */ `
scalar DateTime
scalar URI
scalar GitObjectID
scalar HTML

type Query {
  repository(owner: String!, name: String!, followRenames: Boolean = true): Repository
  node(id: ID!): Node
  nodes(ids: [ID!]!): [Node]!
  viewer: User!
  user(login: String!): User
  search(type: SearchType!, query: String!, first: Int, last: Int, after: String, before: String): SearchResultItemConnection!
  rateLimit(dryRun: Boolean = false): RateLimit
}

type RateLimit {
  cost: Int!
  limit: Int!
  nodeCount: Int!
  remaining: Int!
  resetAt: DateTime!
  used: Int!
}

type PageInfo {
  endCursor: String
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
}

enum OrderDirection { ASC DESC }
enum SearchType { ISSUE ISSUE_ADVANCED REPOSITORY USER DISCUSSION }
enum IssueState { OPEN CLOSED }
enum IssueStateReason { REOPENED NOT_PLANNED COMPLETED DUPLICATE }
enum PullRequestState { OPEN CLOSED MERGED }
enum PullRequestReviewState { PENDING COMMENTED APPROVED CHANGES_REQUESTED DISMISSED }
enum PullRequestReviewDecision { CHANGES_REQUESTED APPROVED REVIEW_REQUIRED }
enum MergeableState { MERGEABLE CONFLICTING UNKNOWN }
enum MergeStateStatus { DIRTY UNKNOWN BLOCKED BEHIND DRAFT UNSTABLE HAS_HOOKS CLEAN }
enum PullRequestMergeMethod { MERGE SQUASH REBASE }
enum CommentAuthorAssociation { MEMBER OWNER MANNEQUIN COLLABORATOR CONTRIBUTOR FIRST_TIME_CONTRIBUTOR FIRST_TIMER NONE }
enum ReactionContent { THUMBS_UP THUMBS_DOWN LAUGH HOORAY CONFUSED HEART ROCKET EYES }
enum LockReason { OFF_TOPIC TOO_HEATED RESOLVED SPAM }
enum MilestoneState { OPEN CLOSED }
enum RepositoryVisibility { PRIVATE PUBLIC INTERNAL }
enum RepositoryPermission { ADMIN MAINTAIN WRITE TRIAGE READ }
enum SubscriptionState { UNSUBSCRIBED SUBSCRIBED IGNORED }
enum StatusState { EXPECTED ERROR FAILURE PENDING SUCCESS }
enum CheckStatusState { REQUESTED QUEUED IN_PROGRESS COMPLETED WAITING PENDING }
enum CheckConclusionState { ACTION_REQUIRED TIMED_OUT CANCELLED FAILURE SUCCESS NEUTRAL SKIPPED STARTUP_FAILURE STALE }
enum ProjectState { OPEN CLOSED }

enum IssueOrderField { CREATED_AT UPDATED_AT COMMENTS }
input IssueOrder { field: IssueOrderField!, direction: OrderDirection! }
enum ReleaseOrderField { CREATED_AT NAME }
input ReleaseOrder { field: ReleaseOrderField!, direction: OrderDirection! }
enum LabelOrderField { NAME CREATED_AT }
input LabelOrder { field: LabelOrderField!, direction: OrderDirection! }
enum MilestoneOrderField { DUE_DATE CREATED_AT UPDATED_AT NUMBER }
input MilestoneOrder { field: MilestoneOrderField!, direction: OrderDirection! }

input IssueFilters {
  assignee: String
  createdBy: String
  labels: [String!]
  mentioned: String
  milestone: String
  milestoneNumber: String
  since: DateTime
  states: [IssueState!]
  viewerSubscribed: Boolean = false
}

interface Node { id: ID! }

interface UniformResourceLocatable {
  resourcePath: URI!
  url: URI!
}

interface Actor {
  avatarUrl(size: Int): URI!
  login: String!
  resourcePath: URI!
  url: URI!
}

interface RepositoryOwner {
  avatarUrl(size: Int): URI!
  id: ID!
  login: String!
  resourcePath: URI!
  url: URI!
}

type User implements Node & Actor & RepositoryOwner & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  login: String!
  name: String
  email: String!
  bio: String
  company: String
  location: String
  websiteUrl: URI
  twitterUsername: String
  isSiteAdmin: Boolean!
  createdAt: DateTime!
  updatedAt: DateTime!
  avatarUrl(size: Int): URI!
  resourcePath: URI!
  url: URI!
}

type Bot implements Node & Actor & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  login: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  avatarUrl(size: Int): URI!
  resourcePath: URI!
  url: URI!
}

type Organization implements Node & Actor & RepositoryOwner & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  login: String!
  name: String
  avatarUrl(size: Int): URI!
  resourcePath: URI!
  url: URI!
}

type Mannequin implements Node & Actor & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  login: String!
  avatarUrl(size: Int): URI!
  resourcePath: URI!
  url: URI!
}

type Team implements Node {
  id: ID!
  name: String!
  slug: String!
  organization: Organization!
  url: URI!
}

type ReactionGroup {
  content: ReactionContent!
  createdAt: DateTime
  users(first: Int, last: Int, after: String, before: String): ReactingUserConnection!
  reactors(first: Int, last: Int, after: String, before: String): ReactorConnection!
  viewerHasReacted: Boolean!
}

union Reactor = User | Bot | Organization | Mannequin

interface Reactable {
  reactionGroups: [ReactionGroup!]
}

union SearchResultItem = Issue | PullRequest | Repository | User | Organization

type SearchResultItemEdge {
  cursor: String!
  node: SearchResultItem
}

type SearchResultItemConnection {
  codeCount: Int!
  discussionCount: Int!
  edges: [SearchResultItemEdge]
  issueCount: Int!
  nodes: [SearchResultItem]
  pageInfo: PageInfo!
  repositoryCount: Int!
  userCount: Int!
  wikiCount: Int!
}
`;
