/**
 * A straightforward, sequential client of the fake (no vitest here): `api()`
 * for one request, `pages()` to follow Link rel="next", and `walk()` — a
 * reference "complete import" that reads every endpoint the importer needs at
 * per_page=100 and counts what it saw, for comparing with `project.expected()`
 * and `project.budget()`.
 */
import type { Json } from './payloads.js';
import type { ExpectedCounts } from './project.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Json;
  text: string;
}

export async function api(url: string, options: { token?: string; headers?: Record<string, string>; redirect?: 'follow' | 'manual' | 'error' } = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = { 'user-agent': 'forgesync-fake-test', accept: 'application/vnd.github+json', ...options.headers };
  if (options.token !== undefined) headers.authorization = `token ${options.token}`;
  const response = await fetch(url, { headers, redirect: options.redirect ?? 'follow' });
  const text = await response.text();
  let body: Json = null;
  if (text && (response.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body, text };
}

/** The `rel` → url map of a Link header. */
export function parseLink(header: string | null): Record<string, string> {
  const links: Record<string, string> = {};
  for (const part of (header ?? '').split(',')) {
    const match = /<([^>]+)>;\s*rel="([^"]+)"/.exec(part.trim());
    if (match) links[match[2] as string] = match[1] as string;
  }
  return links;
}

/** Every item of a list, following rel="next"; also the number of requests made. */
export async function pages(url: string, token?: string): Promise<{ items: Json[]; requests: number }> {
  const items: Json[] = [];
  let next: string | undefined = url;
  let requests = 0;
  while (next) {
    const response = await api(next, { token });
    requests++;
    if (response.status !== 200) throw new Error(`GET ${next} answered ${response.status}: ${response.text.slice(0, 200)}`);
    items.push(...(response.body as Json[]));
    next = parseLink(response.headers.get('link')).next;
  }
  return { items, requests };
}

export interface WalkResult {
  counts: ExpectedCounts;
  users: string[];
  missingUsers: string[];
  attachmentUrls: string[];
  requests: number;
}

/** Reads a whole repository like a simple importer would (per_page=100, sequential). */
export async function walk(fake: { apiUrl: string; webUrl: string; project: { repo: { owner: string; name: string } } }, token?: string): Promise<WalkResult> {
  const repo = `${fake.apiUrl}/repos/${fake.project.repo.owner}/${fake.project.repo.name}`;
  let requests = 0;
  const list = async (path: string) => {
    const result = await pages(`${repo}${path}${path.includes('?') ? '&' : '?'}per_page=100`, token);
    requests += result.requests;
    return result.items;
  };
  const one = async (url: string) => {
    requests++;
    return api(url, { token });
  };
  const repository = await one(repo);
  if (repository.status !== 200) throw new Error(`repository: ${repository.status}`);
  const issues = await list('/issues?state=all');
  const pulls = await list('/pulls?state=all');
  const comments = await list('/issues/comments');
  const reviewComments = await list('/pulls/comments');
  const events = await list('/issues/events');
  const labels = await list('/labels');
  const milestones = await list('/milestones?state=all');
  const releases = await list('/releases');
  // Every collaborator (affiliation=all), then which are direct and which outside: the objects do not say.
  const collaborators = await list('/collaborators');
  await list('/collaborators?affiliation=direct');
  await list('/collaborators?affiliation=outside');
  const branches = await list('/branches?protected=true');
  const reviews: Json[] = [];
  for (const pull of pulls) {
    // The single object: the fields its list item lacks (commits, additions, mergeable, …).
    const single = await one(`${repo}/pulls/${pull.number}`);
    if (single.status !== 200) throw new Error(`pull request #${pull.number}: ${single.status}`);
    reviews.push(...(await list(`/pulls/${pull.number}/reviews`)));
  }
  for (const branch of branches) {
    const protection = await one(`${repo}/branches/${encodeURIComponent(branch.name)}/protection`);
    if (protection.status !== 200) throw new Error(`protection of ${branch.name}: ${protection.status}`);
  }
  const logins = new Set<string>();
  const add = (user: Json) => { if (user?.login) logins.add(user.login); };
  for (const i of issues) { add(i.user); add(i.closed_by); (i.assignees ?? []).forEach(add); }
  for (const p of pulls) (p.requested_reviewers ?? []).forEach(add);
  for (const c of [...comments, ...reviewComments, ...reviews]) add(c.user);
  for (const e of events) { add(e.actor); add(e.assignee); add(e.assigner); add(e.requested_reviewer); add(e.review_requester); }
  collaborators.forEach(add);
  for (const r of releases) { add(r.author); for (const a of r.assets) add(a.uploader); }
  for (const m of milestones) add(m.creator);
  const users: string[] = [];
  const missingUsers: string[] = [];
  for (const login of [...logins].sort()) {
    const profile = await one(`${fake.apiUrl}/users/${encodeURIComponent(login)}`);
    (profile.status === 200 ? users : missingUsers).push(login);
  }
  const attachments = new Set<string>();
  const pattern = new RegExp(`${fake.webUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[^\\s)"'\\]]+`, 'g');
  for (const item of [...issues, ...comments, ...reviewComments, ...reviews, ...releases]) for (const match of (item.body ?? '').matchAll(pattern)) attachments.add(match[0]);
  const assets = releases.reduce((n: number, r: Json) => n + r.assets.length, 0);
  return {
    counts: {
      issue: issues.filter((i) => !i.pull_request).length, pull_request: pulls.length, note: comments.length, diff_note: reviewComments.length, pull_request_review: reviews.length,
      pull_request_review_request: pulls.reduce((n: number, p: Json) => n + p.requested_reviewers.length + p.requested_teams.length, 0),
      pull_request_merged_by: events.filter((e) => e.event === 'merged').length, issue_event: events.length, label: labels.length, milestone: milestones.length,
      release: releases.length, release_asset: assets, attachment: attachments.size, collaborator: collaborators.length, protected_branch: branches.length, user: users.length,
    },
    users,
    missingUsers,
    attachmentUrls: [...attachments].sort(),
    requests,
  };
}
