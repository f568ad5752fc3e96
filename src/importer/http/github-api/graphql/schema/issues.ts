/*
 * Issues, pull requests, their comments and reviews, and the commit and
 * check types gh's `pr view` names (answered as far as the copy knows
 * them). GitHub's names and nullability.
 */

/** The fields an issue and a pull request share (GitHub's Issue and PullRequest both have them). */
const ISSUE_LIKE_FIELDS = `
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  bodyText: String!
  url: URI!
  resourcePath: URI!
  closed: Boolean!
  closedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  lastEditedAt: DateTime
  publishedAt: DateTime
  locked: Boolean!
  activeLockReason: LockReason
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  includesCreatedEdit: Boolean!
  viewerDidAuthor: Boolean!
  viewerCanUpdate: Boolean!
  repository: Repository!
  assignees(first: Int, last: Int, after: String, before: String): UserConnection!
  labels(first: Int, last: Int, after: String, before: String, orderBy: LabelOrder): LabelConnection
  milestone: Milestone
  comments(first: Int, last: Int, after: String, before: String): IssueCommentConnection!
  reactionGroups: [ReactionGroup!]
  projectCards(first: Int, last: Int, after: String, before: String): ProjectCardConnection!
  projectItems(first: Int, last: Int, after: String, before: String, includeArchived: Boolean = true): ProjectV2ItemConnection!
`;

export const ISSUES_SDL = /* GraphQL */ `
interface Comment {
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  createdAt: DateTime!
  id: ID!
  includesCreatedEdit: Boolean!
  viewerDidAuthor: Boolean!
}

type Issue implements Node & Comment & Reactable & UniformResourceLocatable {
${ISSUE_LIKE_FIELDS}
  state: IssueState!
  stateReason: IssueStateReason
  isPinned: Boolean
}

type PullRequest implements Node & Comment & Reactable & UniformResourceLocatable {
${ISSUE_LIKE_FIELDS}
  state: PullRequestState!
  isDraft: Boolean!
  merged: Boolean!
  mergedAt: DateTime
  mergedBy: Actor
  mergeable: MergeableState!
  mergeStateStatus: MergeStateStatus!
  maintainerCanModify: Boolean!
  isCrossRepository: Boolean!
  headRefName: String!
  headRefOid: GitObjectID!
  headRef: Ref
  headRepository: Repository
  headRepositoryOwner: RepositoryOwner
  baseRefName: String!
  baseRefOid: GitObjectID!
  baseRef: Ref
  baseRepository: Repository
  additions: Int!
  deletions: Int!
  changedFiles: Int!
  mergeCommit: Commit
  potentialMergeCommit: Commit
  commits(first: Int, last: Int, after: String, before: String): PullRequestCommitConnection!
  files(first: Int, last: Int, after: String, before: String): PullRequestChangedFileConnection
  reviews(first: Int, last: Int, after: String, before: String, states: [PullRequestReviewState!], author: String): PullRequestReviewConnection
  latestReviews(first: Int, last: Int, after: String, before: String): PullRequestReviewConnection
  latestOpinionatedReviews(first: Int, last: Int, after: String, before: String, writersOnly: Boolean = false): PullRequestReviewConnection
  reviewRequests(first: Int, last: Int, after: String, before: String): ReviewRequestConnection
  reviewDecision: PullRequestReviewDecision
  autoMergeRequest: AutoMergeRequest
}

type AutoMergeRequest {
  enabledAt: DateTime
  enabledBy: Actor
  mergeMethod: PullRequestMergeMethod!
}

type IssueComment implements Node & Comment & Reactable & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  bodyText: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  lastEditedAt: DateTime
  publishedAt: DateTime
  includesCreatedEdit: Boolean!
  isMinimized: Boolean!
  minimizedReason: String
  reactionGroups: [ReactionGroup!]
  url: URI!
  resourcePath: URI!
  viewerDidAuthor: Boolean!
  viewerCanUpdate: Boolean!
}

type PullRequestReview implements Node & Comment & Reactable & UniformResourceLocatable {
  id: ID!
  databaseId: Int
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  bodyText: String!
  state: PullRequestReviewState!
  submittedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  includesCreatedEdit: Boolean!
  commit: Commit
  reactionGroups: [ReactionGroup!]
  url: URI!
  resourcePath: URI!
  viewerDidAuthor: Boolean!
}

union RequestedReviewer = User | Team | Bot | Mannequin

type ReviewRequest implements Node {
  id: ID!
  asCodeOwner: Boolean!
  requestedReviewer: RequestedReviewer
}

type GitActor {
  name: String
  email: String
  date: GitTimestamp
  user: User
}

scalar GitTimestamp

type Commit implements Node {
  id: ID!
  oid: GitObjectID!
  abbreviatedOid: String!
  messageHeadline: String!
  messageBody: String!
  committedDate: DateTime!
  authoredDate: DateTime!
  url: URI!
  authors(first: Int, last: Int, after: String, before: String): GitActorConnection!
  statusCheckRollup: StatusCheckRollup
}

type PullRequestCommit implements Node {
  id: ID!
  commit: Commit!
  url: URI!
}

type PullRequestChangedFile {
  path: String!
  additions: Int!
  deletions: Int!
}

type StatusCheckRollup implements Node {
  id: ID!
  state: StatusState!
  contexts(first: Int, last: Int, after: String, before: String): StatusCheckRollupContextConnection!
}

union StatusCheckRollupContext = StatusContext | CheckRun

type StatusContext implements Node {
  id: ID!
  context: String!
  state: StatusState!
  targetUrl: URI
  createdAt: DateTime!
  isRequired(pullRequestId: ID, pullRequestNumber: Int): Boolean!
}

type Workflow implements Node {
  id: ID!
  name: String!
}

type WorkflowRun implements Node {
  id: ID!
  workflow: Workflow!
}

type CheckSuite implements Node {
  id: ID!
  workflowRun: WorkflowRun
}

type CheckRun implements Node {
  id: ID!
  name: String!
  status: CheckStatusState!
  conclusion: CheckConclusionState
  startedAt: DateTime
  completedAt: DateTime
  detailsUrl: URI
  checkSuite: CheckSuite!
  isRequired(pullRequestId: ID, pullRequestNumber: Int): Boolean!
}
`;
