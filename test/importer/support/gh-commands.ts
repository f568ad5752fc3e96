/*
 * The gh commands the copy must answer (issue 28), one list shared by the
 * capture of gh's queries (gh-capture.ts) and the tests that run them
 * against the copy (gh.test.ts), so the captured queries are exactly the
 * ones the tests send (`argsFor` adds the repository; `GhSubjects` the
 * numbers, tag and filter values, which only change the variables).
 */

/** `--json` fields of issues gh's users ask for most (gh 2.23 names). */
export const ISSUE_FIELDS = 'number,title,labels,state,author,assignees,milestone,comments,createdAt,updatedAt,url,body';
/** `--json` fields of pull requests, reviews and comments included. */
export const PULL_FIELDS = 'number,title,state,author,labels,assignees,milestone,headRefName,baseRefName,isDraft,createdAt,updatedAt,closedAt,mergedAt,url,body,comments,reviews';
/** `--json` fields of labels. */
export const LABEL_FIELDS = 'name,color,description';
/** `--json` fields of a release (gh 2.23 has `--json` on `release view` only). */
export const RELEASE_FIELDS = 'tagName,name,body,isDraft,isPrerelease,createdAt,publishedAt,author,url';

export interface GhCommand {
  /** File-name stem of its captured queries and key in index.json. */
  slug: string;
  /** gh's arguments; `{repo}` stands for the repository where gh takes it as an argument (else `-R` is appended). */
  args: string[];
}

const REPO_ARGUMENT = '{repo}';

/** `command`'s arguments for the repository `repoRef` (`<host>/<owner>/<repo>`): in place of `{repo}`, else after `-R`. */
export function argsFor(command: GhCommand, repoRef: string): string[] {
  if (command.args.includes(REPO_ARGUMENT)) return command.args.map((arg) => (arg === REPO_ARGUMENT ? repoRef : arg));
  return [...command.args, '-R', repoRef];
}

/**
 * What the commands name: the issue and pull request viewed, the release tag,
 * and the filter values. The capture used CAPTURE_SUBJECTS; a test passes
 * the ones its project contains (only variables differ, the queries are the same).
 */
export interface GhSubjects {
  issue: number;
  pull: number;
  tag: string;
  label: string;
  assignee: string;
  author: string;
  /** A milestone title (`--milestone <title>`). */
  milestone: string;
  /** A milestone number (`--milestone <number>`: gh resolves its title first). */
  milestoneNumber: number;
  base: string;
  head: string;
  pullLabel: string;
  search: string;
}

export const CAPTURE_SUBJECTS: GhSubjects = {
  issue: 1, pull: 2, tag: 'v1.0', label: 'bug', assignee: 'x', author: 'y', milestone: 'v1', milestoneNumber: 1, base: 'main', head: 'b', pullLabel: 'l', search: 'crash in:title',
};

/** The commands, slug → command, for `s`. */
export function ghCommands(s: GhSubjects): Record<string, GhCommand> {
  const commands: GhCommand[] = [
    { slug: 'repo-view', args: ['repo', 'view', REPO_ARGUMENT] },
    { slug: 'issue-list', args: ['issue', 'list'] },
    { slug: 'issue-list-json', args: ['issue', 'list', '--state', 'all', '--limit', '100', '--json', ISSUE_FIELDS] },
    { slug: 'issue-list-assignee-author', args: ['issue', 'list', '--state', 'all', '--assignee', s.assignee, '--author', s.author, '--json', ISSUE_FIELDS] },
    { slug: 'issue-list-label', args: ['issue', 'list', '--state', 'all', '--label', s.label, '--json', ISSUE_FIELDS] },
    { slug: 'issue-list-milestone-number', args: ['issue', 'list', '--state', 'all', '--milestone', String(s.milestoneNumber), '--json', ISSUE_FIELDS] },
    {
      slug: 'issue-list-filtered',
      args: ['issue', 'list', '--state', 'all', '--label', s.label, '--assignee', s.assignee, '--author', s.author, '--milestone', s.milestone, '--limit', '5', '--json', ISSUE_FIELDS],
    },
    { slug: 'issue-list-search', args: ['issue', 'list', '--search', s.search] },
    { slug: 'issue-view', args: ['issue', 'view', String(s.issue)] },
    { slug: 'issue-view-comments', args: ['issue', 'view', String(s.issue), '--comments'] },
    { slug: 'issue-view-json', args: ['issue', 'view', String(s.issue), '--json', ISSUE_FIELDS] },
    { slug: 'pr-list', args: ['pr', 'list'] },
    { slug: 'pr-list-json', args: ['pr', 'list', '--state', 'all', '--limit', '100', '--json', PULL_FIELDS] },
    { slug: 'pr-list-base-head', args: ['pr', 'list', '--state', 'all', '--base', s.base, '--head', s.head, '--json', PULL_FIELDS] },
    { slug: 'pr-list-filtered', args: ['pr', 'list', '--state', 'all', '--base', s.base, '--head', s.head, '--label', s.pullLabel, '--json', PULL_FIELDS] },
    { slug: 'pr-view', args: ['pr', 'view', String(s.pull)] },
    { slug: 'pr-view-comments', args: ['pr', 'view', String(s.pull), '--comments'] },
    { slug: 'pr-view-json', args: ['pr', 'view', String(s.pull), '--json', PULL_FIELDS] },
    { slug: 'release-list', args: ['release', 'list'] },
    { slug: 'release-view', args: ['release', 'view', s.tag] },
    { slug: 'release-view-json', args: ['release', 'view', s.tag, '--json', RELEASE_FIELDS] },
    { slug: 'label-list', args: ['label', 'list'] },
    { slug: 'label-list-json', args: ['label', 'list', '--json', LABEL_FIELDS] },
  ];
  return Object.fromEntries(commands.map((command) => [command.slug, command]));
}
