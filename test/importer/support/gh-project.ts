import { generateProject, type FakeProject } from '../../fake-github/index.js';
import type { GhSubjects } from './gh-commands.js';

/*
 * The project gh reads in gh.test.ts: a small generated one (issues, pull
 * requests, reviews, comments, labels, milestones, releases) plus a few
 * items made so that every filter the commands use selects some items and
 * leaves out others: users `x` and `y`; a milestone `v1`; an open issue by
 * `y`, assigned to `x`, labelled `bug`, in `v1`, with "crash" in its title;
 * one like it without the milestone (closed); one with "crash" only in its
 * body; pull requests from head `b` into `main` (an open one labelled
 * `l`, reviewed and commented, and a closed one) and one from head `b2`. Deterministic (seeded), so failures repeat.
 */

export interface GhProject {
  project: FakeProject;
  /** The numbers, tag and filter values gh's commands name (see gh-commands.ts). */
  subjects: GhSubjects;
}

export function ghProject(): GhProject {
  const project = generateProject({ issues: 14, pulls: 5, users: 6, labels: 5, milestones: 2, releases: 2, seed: 28, commentsPerIssue: 2 });
  const step = () => project.advance(60);
  project.createUser('x', { name: 'Xavier' });
  project.createUser('y', { name: 'Yolanda' });
  const v1 = project.createMilestone({ title: 'v1', description: 'The first one', creator: 'x', dueOn: Date.UTC(2021, 0, 1), at: step() });
  const crash = project.createIssue({ title: 'Crash in the parser', body: 'It crashes when the input is empty.', user: 'y', labels: ['bug'], assignees: ['x'], milestone: v1.number, at: step() });
  project.addComment(crash.number, { user: 'x', body: 'I can reproduce this on main.', at: step() });
  project.addComment(crash.number, { user: 'y', body: 'Thanks, a fix is on the way.', at: step() });
  const noMilestone = project.createIssue({ title: 'Slow start', body: 'Takes ten seconds.', user: 'y', labels: ['bug', 'enhancement'], assignees: ['x'], at: step() });
  project.closeInternal(noMilestone, 'x', step());
  project.createIssue({ title: 'Odd log line', body: 'Looks like a crash but is not.', user: 'x', labels: ['question'], at: step() });
  const pull = project.createIssue({ title: 'Fix the parser crash', body: 'Fixes the crash on empty input.', user: 'y', labels: ['l'], assignees: ['x'], milestone: v1.number, at: step(), pull: { headRef: 'b' } });
  project.addComment(pull.number, { user: 'x', body: 'Looks right to me.', at: step() });
  project.submitReview(pull.number, { user: 'x', state: 'CHANGES_REQUESTED', body: 'Please add a test.', at: step() });
  project.submitReview(pull.number, { user: 'x', state: 'APPROVED', body: 'Thanks for the test.', at: step() });
  // GitHub keeps one open pull request per head and base at most: this second one from `b` is closed.
  const second = project.createIssue({ title: 'Same branch, no label', body: 'A second pull from b.', user: 'x', at: step(), pull: { headRef: 'b' } });
  project.closeInternal(second, 'x', step());
  project.createIssue({ title: 'Other branch', body: 'From b2.', user: 'y', labels: ['l'], at: step(), pull: { headRef: 'b2' } });
  project.repo.updatedAt = project.clock;
  const published = project.releases.find((release) => !release.draft);
  if (published === undefined) throw new Error('the generated project has no published release');
  return {
    project,
    subjects: {
      issue: crash.number, pull: pull.number, tag: published.tag, label: 'bug', assignee: 'x', author: 'y', milestone: v1.title, milestoneNumber: 1,
      base: 'main', head: 'b', pullLabel: 'l', search: 'crash in:title',
    },
  };
}
