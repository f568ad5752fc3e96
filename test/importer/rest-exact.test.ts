import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject, type FakeProject } from '../fake-github/index.js';
import { fixturePath, type Json } from '../fake-github/payloads.js';
import { SchemaChecker, type Schema, type SchemaError } from '../fake-github/schema-check.js';
import { importFakeToCopy, type Answer, type FakeAndCopy } from './support/fake-vs-copy.js';
import { embeddedIssue, issueEvent } from '../../src/importer/http/github-api/issue-shapes.js';
import { mergeTimeline } from '../../src/importer/http/github-api/timeline-routes.js';
import { listedPull } from '../../src/importer/http/github-api/pull-routes.js';

/*
 * Every REST path the copy serves (lists, single objects, the endpoints made
 * of one object), under both forms of a repository path (`/repos/{o}/{r}`
 * and `/repositories/{id}`), asked of the fake GitHub and of forgesync's
 * imported copy of it: the same status and the same body, field by field,
 * and each copy answer valid against GitHub's OpenAPI response schema; and
 * GitHub's error bodies (404, 410 for a deleted issue, 422).
 */

const spec = JSON.parse(readFileSync(fixturePath('openapi-schemas.json'), 'utf8')) as { operations: Record<string, Schema>; components: Record<string, Schema> };
const checker = new SchemaChecker(spec.components);
/** Events GitHub's typed issue-event-for-issue schema has no member for: checked against the generic issue-event. */
const UNTYPED_EVENTS = new Set(['closed', 'reopened', 'merged', 'referenced', 'head_ref_deleted']);

/** The issue deleted upstream before the import (a number below the highest): answered 410. */
const DELETED = 4;

/**
 * Removes issue `number` (not a pull request) and everything of it from the
 * fake's model, as deleting an issue on GitHub does; its number stays used.
 */
function deleteIssue(p: FakeProject, number: number): void {
  const issue = p.byNumber.get(number);
  if (!issue || issue.pull) throw new Error(`#${number} is not an issue of the fake`);
  p.issues.splice(p.issues.indexOf(issue), 1);
  p.byNumber.delete(number);
  for (const comment of p.commentsByIssue.get(number) ?? []) {
    p.comments.splice(p.comments.indexOf(comment), 1);
    p.commentById.delete(comment.id);
  }
  p.commentsByIssue.delete(number);
  for (const event of p.eventsByIssue.get(number) ?? []) p.events.splice(p.events.indexOf(event), 1);
  p.eventsByIssue.delete(number);
  p.touch('issue deleted');
}

function project(): FakeProject {
  const p = generateProject({ issues: 30, pulls: 10, users: 12, labels: 6, milestones: 3, releases: 3, seed: 28, owner: 'acme-org', name: 'exact' });
  p.createLabel('Needs Triage/UX', 'dddddd', 'a name to encode');
  // Newer than every published release, but a prerelease: `releases/latest` passes it by.
  p.addRelease({ tag: 'v9.0.0-rc.1', author: 'dev-0001', prerelease: true });
  deleteIssue(p, DELETED);
  return p;
}

/** The fake's answer as GitHub.com words it: the fake stands for GitHub Enterprise 3.17, whose docs live below its version. */
function asDotcom(answer: Answer): unknown {
  return JSON.parse(JSON.stringify(answer.body).replaceAll('https://docs.github.com/enterprise-server@3.17/rest', 'https://docs.github.com/rest'));
}

/** The OpenAPI operation whose response schema a path's answer follows (path after the repository). */
function operationOf(path: string): string | undefined {
  const bare = path.replace(/\?.*$/, '');
  const table: [RegExp, string][] = [
    [/^$/, 'repos/get'],
    [/^\/issues$/, 'issues/list-for-repo'],
    [/^\/issues\/comments$/, 'issues/list-comments-for-repo'],
    [/^\/issues\/comments\/\d+$/, 'issues/get-comment'],
    [/^\/issues\/events$/, 'issues/list-events-for-repo'],
    [/^\/issues\/events\/\d+$/, 'issues/get-event'],
    [/^\/issues\/\d+$/, 'issues/get'],
    [/^\/issues\/\d+\/comments$/, 'issues/list-comments'],
    [/^\/issues\/\d+\/events$/, 'issues/list-events'],
    [/^\/issues\/\d+\/labels$/, 'issues/list-labels-on-issue'],
    [/^\/issues\/\d+\/timeline$/, 'issues/list-events-for-timeline'],
    [/^\/pulls$/, 'pulls/list'],
    [/^\/pulls\/comments$/, 'pulls/list-review-comments-for-repo'],
    [/^\/pulls\/comments\/\d+$/, 'pulls/get-review-comment'],
    [/^\/pulls\/\d+$/, 'pulls/get'],
    [/^\/pulls\/\d+\/reviews$/, 'pulls/list-reviews'],
    [/^\/pulls\/\d+\/reviews\/\d+$/, 'pulls/get-review'],
    [/^\/pulls\/\d+\/comments$/, 'pulls/list-review-comments'],
    [/^\/pulls\/\d+\/requested_reviewers$/, 'pulls/list-requested-reviewers'],
    [/^\/labels$/, 'issues/list-labels-for-repo'],
    [/^\/labels\/.+$/, 'issues/get-label'],
    [/^\/milestones$/, 'issues/list-milestones'],
    [/^\/milestones\/\d+$/, 'issues/get-milestone'],
    [/^\/releases$/, 'repos/list-releases'],
    [/^\/releases\/latest$/, 'repos/get-latest-release'],
    [/^\/releases\/\d+$/, 'repos/get-release'],
    [/^\/releases\/tags\/.+$/, 'repos/get-release'],
    [/^\/collaborators$/, 'repos/list-collaborators'],
    [/^\/branches\/.+\/protection$/, 'repos/get-branch-protection'],
  ];
  return table.find(([pattern]) => pattern.test(bare))?.[1];
}

/**
 * A gap of GitHub's description, not of the answer: a label's `description`
 * is a plain string in the pull request schemas, and GitHub sends null for a
 * label without one.
 */
function isSpecGap(error: SchemaError): boolean {
  return /\/labels\/\d+\/description$/.test(error.path) && error.message === 'expected string, got null';
}

/** Every mismatch of `body` with the response schema of `operation` (events of untyped kinds against the generic one). */
function schemaErrors(operation: string, body: Json): SchemaError[] {
  const schema = spec.operations[operation];
  if (!schema) throw new Error(`no schema for ${operation}`);
  if (operation !== 'issues/list-events') return checker.check(body, schema).filter((error) => !isSpecGap(error));
  return (body as Json[]).flatMap((event, index) =>
    checker.check(event, UNTYPED_EVENTS.has(event.event) ? { $ref: '#/components/schemas/issue-event' } : (schema.items as Schema), `/${index}`),
  );
}

/**
 * What of a body is compared: all of it, but for release assets, whose
 * bytes the copy downloaded (the fake counted that download, and the copy
 * serves the bytes itself: `browser_download_url` points at its attachments).
 */
function comparable(body: unknown, copyBase?: string): unknown {
  const visit = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'download_count') continue;
      if (key === 'browser_download_url' && typeof value === 'string') {
        if (copyBase !== undefined) expect(value.startsWith(`${copyBase}/attachments/`), value).toBe(true);
        continue;
      }
      out[key] = visit(value);
    }
    return out;
  };
  return visit(body as Json);
}

describe.each(['sqlite', 'postgres'] as const)('GitHub-compatible API on %s: every REST path answers as GitHub (the fake) does', (database) => {
  let pair: FakeAndCopy;
  let repositoryId: number;
  const byName = '/repos/acme-org/exact';
  /** Paths after the repository, with the ids and numbers of this project filled in (beforeAll). */
  const paths: string[] = [];

  beforeAll(async () => {
    pair = await importFakeToCopy({ project: project(), database });
    const p = pair.harness.fake.project;
    repositoryId = p.repo.id;
    const pull = p.pulls.find((i) => (p.reviewsByPull.get(i.number)?.length ?? 0) > 0 && (p.reviewCommentsByPull.get(i.number)?.length ?? 0) > 0);
    const unmerged = p.pulls.find((i) => !i.pull?.merged);
    const merged = p.pulls.find((i) => i.pull?.merged);
    const requested = p.pulls.find((i) => (i.pull?.requestedReviewers.length ?? 0) + (i.pull?.requestedTeams.length ?? 0) > 0);
    const labelled = p.issues.find((i) => !i.pull && i.labels.length > 0 && (p.commentsByIssue.get(i.number)?.length ?? 0) > 0);
    if (!pull || !unmerged || !merged || !requested || !labelled) throw new Error('the generated project lacks a kind of pull request or issue the test needs');
    const review = p.reviewsByPull.get(pull.number)?.[0];
    const published = p.releases.find((r) => !r.draft && !r.prerelease);
    const draft = p.releases.find((r) => r.draft);
    const label = p.labels.at(-1);
    if (!review || !published || !draft || !label) throw new Error('the generated project lacks a review, a release or a label');
    paths.push(
      '',
      '/issues?state=all&per_page=100',
      '/issues/comments?per_page=100',
      `/issues/comments/${p.comments[0]?.id}`,
      '/issues/events?per_page=100',
      `/issues/events/${p.events[0]?.id}`,
      `/issues/events/${p.events.at(-1)?.id}`,
      ...[labelled.number, pull.number, merged.number].flatMap((n) => [`/issues/${n}`, `/issues/${n}/comments`, `/issues/${n}/events`, `/issues/${n}/labels`, `/issues/${n}/timeline`]),
      `/issues/${labelled.number}/labels?per_page=1&page=1`,
      '/pulls?state=all&per_page=100',
      ...[pull.number, unmerged.number, merged.number].map((n) => `/pulls/${n}`),
      `/pulls/${pull.number}/reviews`,
      `/pulls/${pull.number}/reviews/${review.id}`,
      `/pulls/${pull.number}/comments`,
      `/pulls/${requested.number}/requested_reviewers`,
      `/pulls/${unmerged.number}/requested_reviewers`,
      '/pulls/comments?per_page=100',
      `/pulls/comments/${p.reviewComments[0]?.id}`,
      '/labels?per_page=100',
      `/labels/${encodeURIComponent(label.name)}`,
      `/labels/${encodeURIComponent(label.name.toUpperCase())}`,
      '/milestones?state=all',
      '/milestones/1',
      '/releases',
      '/releases/latest',
      `/releases/${published.id}`,
      `/releases/${draft.id}`,
      `/releases/tags/${encodeURIComponent(published.tag)}`,
      '/collaborators',
      '/collaborators?affiliation=direct',
      '/collaborators?affiliation=outside',
      '/branches/main/protection',
    );
  }, 240_000);
  afterAll(async () => {
    await pair?.close();
  });

  it('answers every path under /repos/{owner}/{repo} as the fake does, valid against GitHub\'s schema', async () => {
    expect(paths.length).toBeGreaterThan(40);
    for (const path of paths) {
      const { fake, copy } = await pair.both(`${byName}${path}`);
      expect(fake.status, path).toBe(200);
      expect({ status: copy.status, body: comparable(copy.body, pair.copyBase) }, path).toEqual({ status: fake.status, body: comparable(fake.body) });
      const operation = operationOf(path);
      expect(operation, path).toBeDefined();
      expect(schemaErrors(operation as string, copy.body), `${path} against ${operation}`).toEqual([]);
    }
  });

  it('answers the same under /repositories/{repository_id}', async () => {
    for (const path of paths) {
      const { fake, copy } = await pair.both(`/repositories/${repositoryId}${path}`);
      expect(fake.status, path).toBe(200);
      expect({ status: copy.status, body: comparable(copy.body, pair.copyBase) }, path).toEqual({ status: fake.status, body: comparable(fake.body) });
      // And exactly what the owner/repo form answers.
      const named = await pair.copy(`${byName}${path}`);
      expect(copy.text, path).toBe(named.text);
    }
    const unknown = await pair.both(`/repositories/${repositoryId + 1}/issues`);
    expect(unknown.copy.status).toBe(404);
    expect(unknown.copy.body).toEqual(asDotcom(unknown.fake));
  });

  it('answers a user as the fake does', async () => {
    const login = pair.harness.fake.project.issues[0]?.user as string;
    const { fake, copy } = await pair.both(`/users/${login}`);
    expect(copy.status).toBe(fake.status);
    expect(copy.body).toEqual(fake.body);
  });

  it('single pull requests carry every single-object field, merged_by null until merged; list items none of them', async () => {
    const p = pair.harness.fake.project;
    const unmerged = p.pulls.find((i) => !i.pull?.merged) as { number: number };
    const single = (await pair.copy(`${byName}/pulls/${unmerged.number}`)).body as Json;
    expect(single).toHaveProperty('merged_by', null);
    expect(single).toHaveProperty('merged', false);
    const list = (await pair.copy(`${byName}/pulls?state=all&per_page=100`)).body as Json[];
    for (const field of ['merged', 'mergeable', 'rebaseable', 'mergeable_state', 'merged_by', 'comments', 'review_comments', 'maintainer_can_modify', 'commits', 'additions', 'deletions', 'changed_files']) {
      expect(list.filter((item) => field in item).length, field).toBe(0);
    }
  });

  it('events carry label and performed_via_github_app; the embedded issue has no closed_by', async () => {
    const events = (await pair.copy(`${byName}/issues/events?per_page=100`)).body as Json[];
    expect(events.filter((e) => e.event === 'labeled').every((e) => typeof e.label?.name === 'string')).toBe(true);
    expect(events.every((e) => e.performed_via_github_app === null)).toBe(true);
    expect(events.some((e) => e.issue?.state === 'closed')).toBe(true);
    expect(events.filter((e) => e.issue && 'closed_by' in e.issue)).toEqual([]);
  });

  it('a timeline merges events, comments and reviews in time order', async () => {
    const p = pair.harness.fake.project;
    const pull = p.pulls.find((i) => (p.reviewsByPull.get(i.number)?.length ?? 0) > 0 && (p.commentsByIssue.get(i.number)?.length ?? 0) > 0) as { number: number };
    const timeline = (await pair.copy(`${byName}/issues/${pull.number}/timeline?per_page=100`)).body as Json[];
    const kinds = new Set(timeline.map((item) => item.event));
    expect(kinds.has('commented') && kinds.has('reviewed')).toBe(true);
    const times = timeline.map((item) => item.created_at ?? item.submitted_at);
    expect(times).toEqual([...times].sort());
  });

  it('the latest release is the newest published one, passing a newer prerelease and the draft by', async () => {
    const p = pair.harness.fake.project;
    const published = p.releases.filter((r) => !r.draft && !r.prerelease).sort((a, b) => b.createdAt - a.createdAt)[0];
    const latest = (await pair.copy(`${byName}/releases/latest`)).body as Json;
    expect(latest.tag_name).toBe(published?.tag);
    expect(p.releases.some((r) => r.prerelease && r.createdAt > (published?.createdAt ?? 0))).toBe(true);
  });

  it('labels are found by name case-insensitively, URL-encoded', async () => {
    const label = (await pair.copy(`${byName}/labels/${encodeURIComponent('needs triage/ux')}`)).body as Json;
    expect(label.name).toBe('Needs Triage/UX');
  });

  it('answers GitHub\'s 404 and 410 bodies, with the documentation of the operation asked for', async () => {
    const p = pair.harness.fake.project;
    const beyond = (p.issues.at(-1)?.number ?? 0) + 5;
    const pull = p.pulls[0]?.number as number;
    const missing = [
      `/issues/${beyond}`, `/issues/${beyond}/comments`, `/issues/${beyond}/timeline`, `/issues/${DELETED}`, `/issues/${DELETED}/comments`,
      `/issues/${DELETED}/events`, `/issues/${DELETED}/labels`, `/issues/${DELETED}/timeline`, '/issues/comments/1', '/issues/events/1',
      `/pulls/${beyond}`, `/pulls/${DELETED}`, `/pulls/${pull}/reviews/1`, `/pulls/${pull}/requested_reviewers`.replace(String(pull), String(beyond)),
      '/pulls/comments/1', '/labels/no-such-label', '/milestones/999', '/releases/1', '/releases/tags/no-such-tag',
    ];
    for (const path of missing) {
      for (const base of [byName, `/repositories/${repositoryId}`]) {
        const { fake, copy } = await pair.both(`${base}${path}`);
        expect(fake.status, path).toBeGreaterThanOrEqual(404);
        expect({ status: copy.status, body: copy.body }, `${base}${path}`).toEqual({ status: fake.status, body: asDotcom(fake) });
      }
    }
    const deleted = await pair.copy(`${byName}/issues/${DELETED}`);
    expect(deleted.body).toEqual({ message: 'This issue was deleted', documentation_url: 'https://docs.github.com/rest/issues/issues#get-an-issue', status: '410' });
    const otherRepo = await pair.both('/repos/acme-org/nothing-here/issues/1/comments');
    expect(otherRepo.copy.body).toEqual({ message: 'Not Found', documentation_url: 'https://docs.github.com/rest/issues/comments#list-issue-comments', status: '404' });
    expect(otherRepo.copy.body).toEqual(asDotcom(otherRepo.fake));
  });

  it('answers 422 Validation Failed for a query value GitHub refuses', async () => {
    const refused = await pair.copy(`${byName}/milestones?state=bogus`);
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      message: 'Validation Failed',
      errors: [{ resource: 'Milestone', field: 'state', code: 'invalid' }],
      documentation_url: 'https://docs.github.com/rest/issues/milestones#list-milestones',
      status: '422',
    });
  });
});

describe('GitHub-compatible API: the shapes made from stored objects', () => {
  it('an event gets GitHub\'s performed_via_github_app (null) when stored without it, and loses its embedded issue', () => {
    expect(issueEvent({ id: 1, event: 'closed', issue: { number: 2 } })).toEqual({ id: 1, event: 'closed', performed_via_github_app: null });
    const byApp = { id: 1, event: 'labeled', label: { name: 'bug', color: 'f00' }, performed_via_github_app: { id: 7 } };
    expect(issueEvent(byApp)).toEqual(byApp);
  });

  it('an embedded issue has no closed_by; a listed pull request none of the single object\'s fields', () => {
    expect(embeddedIssue({ number: 2, closed_by: { login: 'a' }, state: 'closed' })).toEqual({ number: 2, state: 'closed' });
    expect(listedPull({ number: 3, merged: true, merged_by: null, commits: 2, mergeable: null, draft: false })).toEqual({ number: 3, draft: false });
  });

  it('a timeline orders by time, then events before comments before reviews, then by id', () => {
    const at = (s: number) => `2024-01-01T00:00:0${s}Z`;
    const timeline = mergeTimeline({
      events: [{ id: 9, event: 'closed', created_at: at(2) }, { id: 3, event: 'labeled', created_at: at(1) }],
      comments: [{ id: 5, created_at: at(1), user: { login: 'c' } }],
      reviews: [{ id: 4, submitted_at: at(1), state: 'CHANGES_REQUESTED' }, { id: 1, submitted_at: at(3), state: 'APPROVED' }],
    });
    expect(timeline.map((item) => [item.event, item.id])).toEqual([['labeled', 3], ['commented', 5], ['reviewed', 4], ['closed', 9], ['reviewed', 1]]);
    expect(timeline[1]).toMatchObject({ actor: { login: 'c' }, user: { login: 'c' } });
    expect(timeline[2]).toMatchObject({ state: 'changes_requested' });
  });
});
