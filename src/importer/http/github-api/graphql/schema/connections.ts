/*
 * The connection and edge types, generated: every `XConnection` has GitHub's
 * `edges { cursor node }`, `nodes`, `pageInfo` and `totalCount`.
 */

/** Connection name → node type (the name's own type unless the two differ). */
const CONNECTIONS: Record<string, string> = {
  IssueConnection: 'Issue',
  PullRequestConnection: 'PullRequest',
  IssueCommentConnection: 'IssueComment',
  PullRequestReviewConnection: 'PullRequestReview',
  ReviewRequestConnection: 'ReviewRequest',
  LabelConnection: 'Label',
  MilestoneConnection: 'Milestone',
  ReleaseConnection: 'Release',
  ReleaseAssetConnection: 'ReleaseAsset',
  UserConnection: 'User',
  ReactingUserConnection: 'User',
  ReactorConnection: 'Reactor',
  ProjectConnection: 'Project',
  ProjectCardConnection: 'ProjectCard',
  ProjectV2ItemConnection: 'ProjectV2Item',
  RepositoryTopicConnection: 'RepositoryTopic',
  PullRequestCommitConnection: 'PullRequestCommit',
  PullRequestChangedFileConnection: 'PullRequestChangedFile',
  GitActorConnection: 'GitActor',
  StatusCheckRollupContextConnection: 'StatusCheckRollupContext',
};

/** The SDL of every connection type and its edge type. */
export function connectionSdl(): string {
  return Object.entries(CONNECTIONS)
    .map(([connection, node]) => {
      const edge = connection.replace(/Connection$/, 'Edge');
      return `type ${edge} {\n  cursor: String!\n  node: ${node}\n}\n\ntype ${connection} {\n  edges: [${edge}]\n  nodes: [${node}]\n  pageInfo: PageInfo!\n  totalCount: Int!\n}\n`;
    })
    .join('\n');
}
