/**
 * Builders of whole fake projects: `smallProject()` (hand-shaped, a few of
 * everything; also `FakeProject.small()`) and `generateProject()` (seeded,
 * deterministic, scales to tens of thousands of issues).
 */
import { FakeProject, type IssueRecord, type ProtectionSettings, type ReviewState } from './project.js';

/** mulberry32: a small, fast, seedable PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = 'the a cache parser build release flaky test widget config timeout retry token fetch render layout crash memory leak docs typo api endpoint regression upgrade dependency lint format migration schema index query page cursor sync mirror import export webhook deploy ci pipeline branch merge conflict review patch bug feature slow fast'.split(' ');

function sentence(random: () => number, min: number, max: number): string {
  const count = min + Math.floor(random() * (max - min + 1));
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(WORDS[Math.floor(random() * WORDS.length)] as string);
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function uuid(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

export function defaultProtection(overrides: Partial<ProtectionSettings> = {}): ProtectionSettings {
  return {
    requiredStatusChecks: ['ci/build', 'ci/test'], strict: true, enforceAdmins: false, requiredApprovals: 1, dismissStaleReviews: true, requireCodeOwners: false,
    linearHistory: false, allowForcePushes: false, allowDeletions: false, conversationResolution: true, restrictions: null, ...overrides,
  };
}

/**
 * The small project: 12 issues and 6 pull requests (#3, #5, #8, #11, #14, #17;
 * #3 and #8 merged, #11 closed, #17 a draft by a bot), 40 issue comments, 20
 * review comments in threads across 8 reviews, 5 labels, 2 milestones, 2
 * releases with 3 assets and a draft with 1 (readable only through the API's
 * asset endpoint), 3 collaborators (one through a team, one outside the organisation), 2 protected
 * branches, 4 attachments (one referenced twice, one answering 302) plus one
 * foreign link, and one deleted user (`frank`, shown as `ghost`).
 */
export function smallProject(): FakeProject {
  const p = new FakeProject({ owner: 'acme-org', name: 'widgets', description: 'Widgets for the fake GitHub', start: Date.UTC(2022, 2, 1, 9, 0, 0) });
  const step = () => p.advance(3600);
  for (const login of ['alice', 'bob', 'carol', 'dave', 'erin']) p.createUser(login, { name: login[0]?.toUpperCase() + login.slice(1) });
  p.createUser('frank', { deleted: true });
  p.createUser('dependabot[bot]', { type: 'Bot', name: 'dependabot[bot]' });
  p.createTeam('core', 'Core', 'push');
  p.createTeam('docs', 'Docs', 'pull');
  p.collaborators.push({ login: 'alice', permission: 'admin', direct: true }, { login: 'bob', permission: 'write', direct: true, outside: true }, { login: 'carol', permission: 'triage', direct: false });
  p.createLabel('bug', 'd73a4a', "Something isn't working", true);
  p.createLabel('enhancement', 'a2eeef', 'New feature or request', true);
  p.createLabel('documentation', '0075ca', 'Improvements or additions to documentation', true);
  p.createLabel('question', 'd876e3', 'Further information is requested', true);
  p.createLabel('good first issue', '7057ff', 'Good for newcomers', true);
  p.createMilestone({ title: 'v1.0', description: 'First stable release', creator: 'alice', dueOn: Date.UTC(2022, 5, 1), at: step() });
  p.createMilestone({ title: 'v1.1', description: null, creator: 'alice', at: step() });
  p.addCommit({ message: 'Initial commit', author: 'alice', at: step(), files: [{ path: 'README.md', content: '# widgets\n' }] });
  p.addCommit({ message: 'Add widget core', author: 'alice', at: step(), files: [{ path: 'src/widget.txt', content: 'widget core\n' }] });
  p.addCommit({ message: 'Add CI', author: 'bob', at: step(), files: [{ path: '.ci.yml', content: 'build: true\n' }] });
  p.branches.push({ name: 'release/1.x', commit: p.mainTipKey(), protection: defaultProtection({ requiredApprovals: 2, enforceAdmins: true, linearHistory: true, restrictions: { users: ['alice'], teams: ['core'] } }) });
  p.branches.unshift({ name: 'main', commit: 'main', protection: defaultProtection() });

  const screenshot = p.addAttachment({ path: '/user-attachments/assets/3f6c2a8e-1b7d-4c1e-9a55-0d2f8c4b7e11', name: 'screenshot.png', contentType: 'image/png', size: 2048, redirectTo: null });
  const logs = p.addAttachment({ path: '/acme-org/widgets/files/9001/logs.zip', name: 'logs.zip', contentType: 'application/zip', size: 4096, redirectTo: null });
  const notes = p.addAttachment({ path: '/acme-org/widgets/files/9002/notes.txt', name: 'notes.txt', contentType: 'text/plain', size: 300, redirectTo: null });
  const moved = p.addAttachment({ path: '/user-attachments/assets/9b1d7e44-52c3-4f0a-8e6d-77a1c2b3d4e5', name: 'diagram.png', contentType: 'image/png', size: 1024, redirectTo: '/_storage/user-attachments/9b1d7e44-52c3-4f0a-8e6d-77a1c2b3d4e5/diagram.png' });

  const pulls = new Set([3, 5, 8, 11, 14, 17]);
  const commentCounts = [4, 2, 3, 1, 2, 0, 3, 4, 2, 1, 3, 2, 1, 2, 3, 2, 3, 2];
  const authors = ['dave', 'erin', 'bob', 'alice', 'carol', 'frank', 'dave', 'bob', 'erin', 'alice', 'carol', 'dave', 'erin', 'alice', 'dave', 'bob', 'dependabot[bot]', 'erin'];
  const commenters = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
  const bodies: Record<number, string> = {
    1: `The widget crashes on start.\n\n![screenshot](${screenshot})\n\nSee also [a tracker]({{foreign}}/evil/tracker.png).`,
    2: `Logs attached: [logs.zip](${logs})`,
    4: `Notes: [notes.txt](${notes})`,
    7: `Architecture: ![diagram](${moved})`,
  };
  const reviewPlan: Record<number, { user: string; state: ReviewState; comments: number }[]> = {
    3: [{ user: 'alice', state: 'CHANGES_REQUESTED', comments: 3 }, { user: 'alice', state: 'APPROVED', comments: 2 }],
    5: [{ user: 'alice', state: 'COMMENTED', comments: 4 }, { user: 'carol', state: 'COMMENTED', comments: 1 }],
    8: [{ user: 'bob', state: 'APPROVED', comments: 3 }],
    11: [{ user: 'bob', state: 'CHANGES_REQUESTED', comments: 2 }],
    14: [{ user: 'bob', state: 'COMMENTED', comments: 3 }],
    17: [{ user: 'alice', state: 'COMMENTED', comments: 2 }],
  };
  const requests: Record<number, { users: string[]; teams: string[] }> = {
    3: { users: ['alice'], teams: [] }, 5: { users: ['alice', 'bob'], teams: ['core'] }, 8: { users: ['bob'], teams: [] },
    11: { users: [], teams: [] }, 14: { users: ['carol'], teams: [] }, 17: { users: [], teams: ['docs'] },
  };
  const labelSets = [['bug'], ['bug', 'question'], ['enhancement'], ['documentation'], ['enhancement', 'good first issue'], ['bug'], ['question'], []];
  for (let n = 1; n <= 18; n++) {
    const author = authors[n - 1] as string;
    const isPull = pulls.has(n);
    const issue = p.createIssue({
      title: isPull ? `Improve widget ${n}` : `Widget problem ${n}`,
      body: bodies[n] ?? `Details for #${n}.`,
      user: author,
      labels: labelSets[n % labelSets.length],
      assignees: n % 3 === 0 ? ['bob'] : n % 4 === 0 ? ['alice', 'carol'] : [],
      milestone: n <= 6 ? 1 : n % 2 === 0 ? 2 : null,
      at: step(),
      pull: isPull ? { draft: n === 17, requestedReviewers: requests[n]?.users, requestedTeams: requests[n]?.teams, additions: n * 3, deletions: n } : undefined,
    });
    for (let c = 0; c < (commentCounts[n - 1] as number); c++) {
      const body = n === 2 && c === 1 ? `Same screenshot as #1: ![again](${screenshot})` : `Comment ${c + 1} on #${n}: ${c % 2 ? 'I can reproduce this.' : 'Thanks for the report.'}`;
      p.addComment(n, { user: commenters[(n + c) % commenters.length] as string, body, at: step() });
    }
    if (isPull) {
      let firstThread: number[] = [];
      for (const [r, plan] of (reviewPlan[n] ?? []).entries()) {
        const comments = Array.from({ length: plan.comments }, (_, i) => ({
          path: `src/file${i % 2}.txt`, line: 3 + i, body: r === 0 ? `Nit ${i + 1}: please rename this.` : `Reply ${i + 1}: done?`,
          ...(r > 0 && firstThread[i % Math.max(1, firstThread.length)] !== undefined ? { inReplyTo: firstThread[i % firstThread.length] } : {}),
        }));
        const made = p.submitReview(n, { user: plan.user, state: plan.state, body: plan.state === 'APPROVED' ? 'LGTM' : '', at: step(), comments });
        if (r === 0) firstThread = made.comments.map((c) => c.id);
      }
      if (n === 3 || n === 8) p.mergeInternal(issue, n === 3 ? 'alice' : 'bob', step());
      if (n === 11) p.closeInternal(issue, 'bob', step());
    } else {
      if (n % 3 === 1) p.closeInternal(issue, n === 7 ? 'frank' : 'alice', step(), n === 10 ? 'not_planned' : 'completed');
      if (n === 4) {
        p.addCommit({ message: `Fix the docs (refs #${n})`, author: 'bob', at: step() });
        p.addEvent(issue, 'referenced', 'bob', p.clock, { commit: p.mainTipKey() });
      }
      if (n === 10) p.reopenInternal(issue, 'alice', step());
    }
  }
  p.addRelease({
    tag: 'v1.0.0', author: 'alice', at: step(), body: 'First release. Screenshot: ![s](' + screenshot + ')',
    assets: [{ name: 'widgets-1.0.0.zip', contentType: 'application/zip', size: 3000, label: 'Source bundle', downloadCount: 12 }, { name: 'checksums.txt', contentType: 'text/plain', size: 200 }],
  });
  p.addRelease({ tag: 'v1.1.0-rc1', author: 'bob', prerelease: true, at: step(), assets: [{ name: 'widgets-1.1.0-rc1.zip', contentType: 'application/zip', size: 2500 }] });
  p.addRelease({ tag: 'v1.1.0', author: 'alice', draft: true, at: step(), assets: [{ name: 'widgets-1.1.0.zip', contentType: 'application/zip', size: 2700 }] });
  p.wikiHistory.push({ key: 'wiki:0', message: 'Initial Home page', author: 'alice', at: step(), files: [{ path: 'Home.md', content: '# Welcome to the widgets wiki\n' }, { path: 'Setup.md', content: '# Setup\n\nRun the thing.\n' }] });
  p.repo.updatedAt = p.clock;
  return p;
}

export interface GenerateOptions {
  /** Issues that are not pull requests. */
  issues: number;
  /** Pull requests (sharing the number space, interleaved at random); default issues / 4. About 60 % merged, 15 % closed. */
  pulls?: number;
  /** Issue comments per issue and per pull request on average, default 3 (the total is exact: round((issues + pulls) × this)). */
  commentsPerIssue?: number;
  /** Exact number of review comments per pull request, default 3 (spread over its reviews; none without reviews). */
  reviewCommentsPerPull?: number;
  /** Exact number of reviews per pull request, default 2 (the last one APPROVED). */
  reviewsPerPull?: number;
  /** Accounts (at least 3); every 40th (from the 8th) is deleted, or the last one when fewer. */
  users?: number;
  seed?: number;
  owner?: string;
  name?: string;
  labels?: number;
  milestones?: number;
  /** Published releases (2 assets each), default 4; with any, also one draft with an asset. */
  releases?: number;
  /** Every N-th issue body carries an image attachment (and every 2N-th a zip file). */
  attachmentEvery?: number;
}

/** A seeded, deterministic project; records only (payloads are built per request). */
export function generateProject(options: GenerateOptions): FakeProject {
  const random = prng(options.seed ?? 1);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const issuesCount = options.issues;
  const pullCount = options.pulls ?? Math.floor(issuesCount / 4);
  const total = issuesCount + pullCount;
  const p = new FakeProject({ owner: options.owner ?? 'acme-org', name: options.name ?? 'bigrepo', start: Date.UTC(2019, 0, 7, 8, 0, 0), repoId: 480000000 + (options.seed ?? 1) });
  const step = (max = 600) => p.advance(10 + Math.floor(random() * max));
  const userCount = Math.max(3, options.users ?? 50);
  const logins: string[] = [];
  for (let i = 0; i < userCount; i++) {
    const login = `dev-${String(i + 1).padStart(4, '0')}`;
    logins.push(login);
    p.createUser(login, { deleted: i % 40 === 7 });
  }
  if (![...p.users.values()].some((u) => u.deleted)) (p.users.get(logins.at(-1) as string) as { deleted: boolean }).deleted = true;
  const collaborators = logins.slice(0, Math.min(5, userCount - 1));
  collaborators.forEach((login, i) => p.collaborators.push({ login, permission: i === 0 ? 'admin' : i === 1 ? 'maintain' : 'write', direct: i !== 2, outside: i === 4 }));
  const mergers = collaborators.filter((login) => !p.users.get(login)?.deleted);
  p.createTeam('core', 'Core');
  p.createTeam('reviewers', 'Reviewers');
  const labelNames = ['bug', 'enhancement', 'documentation', 'question', 'good first issue', 'help wanted', 'wontfix', 'duplicate', 'invalid', 'performance', 'security', 'ci'];
  for (let i = 0; i < (options.labels ?? 10); i++) p.createLabel(labelNames[i] ?? `area/${i}`, (0x100000 + Math.floor(random() * 0xefffff)).toString(16), i % 3 === 0 ? null : `Label ${i}`, i < 9);
  for (let i = 0; i < (options.milestones ?? 6); i++) {
    p.createMilestone({ title: `v${i + 1}.0`, description: i % 2 ? null : `Milestone ${i + 1}`, creator: collaborators[0] as string, state: i < (options.milestones ?? 6) / 2 ? 'closed' : 'open', dueOn: Date.UTC(2020, i, 1), at: step() });
  }
  p.addCommit({ message: 'Initial commit', author: collaborators[0] as string, at: step(), files: [{ path: 'README.md', content: `# ${p.repo.name}\n` }] });
  p.branches.push({ name: 'main', commit: 'main', protection: defaultProtection() });
  p.branches.push({ name: 'release/1.x', commit: p.mainTipKey(), protection: defaultProtection({ requiredApprovals: 2, restrictions: { users: [collaborators[0] as string], teams: ['core'] } }) });

  // Exact totals: comments land on random items; review comments and reviews are per pull.
  const commentCounts = new Uint16Array(total + 1);
  const commentTotal = Math.round(total * (options.commentsPerIssue ?? 3));
  for (let i = 0; i < commentTotal; i++) commentCounts[1 + Math.floor(random() * total)]!++;
  const reviewsPerPull = options.reviewsPerPull ?? 2;
  const reviewCommentsPerPull = options.reviewCommentsPerPull ?? 3;
  const every = options.attachmentEvery ?? 200;
  const releases = options.releases ?? 4;
  let pullsLeft = pullCount;
  let firstImage: string | undefined;
  for (let n = 1; n <= total; n++) {
    const isPull = random() < pullsLeft / (total - n + 1);
    if (isPull) pullsLeft--;
    const author = pick(logins);
    let body = `${sentence(random, 6, 30)}.`;
    if (n === 1) body += ' Reported upstream too: {{foreign}}/tracker/issue.png';
    if (!isPull && n % every === 0) {
      const path = `/user-attachments/assets/${uuid(random)}`;
      body += `\n\n![screenshot](${p.addAttachment({ path, name: 'screenshot.png', contentType: 'image/png', size: 1500, redirectTo: n === every ? `/_storage${path}/screenshot.png` : null })})`;
      firstImage ??= `{{web}}${path}`;
    }
    if (!isPull && n % (every * 2) === 0) body += `\n\n[trace.zip](${p.addAttachment({ path: `/${p.repo.owner}/${p.repo.name}/files/${10000 + n}/trace.zip`, name: 'trace.zip', contentType: 'application/zip', size: 3000, redirectTo: null })})`;
    const labelCount = Math.floor(random() * 3);
    const labels = Array.from({ length: labelCount }, () => pick(p.labels).name);
    const others = logins.filter((login) => login !== author);
    const active = others.filter((login) => !p.users.get(login)?.deleted);
    const issue = p.createIssue({
      title: sentence(random, 3, 9), body, user: author, labels: [...new Set(labels)], assignees: random() < 0.3 ? [pick(collaborators)] : [],
      milestone: p.milestones.length > 0 && random() < 0.2 ? 1 + Math.floor(random() * p.milestones.length) : null, at: step(),
      pull: isPull ? { requestedReviewers: [pick(active)], requestedTeams: random() < 0.2 ? ['reviewers'] : [], additions: 1 + Math.floor(random() * 200), deletions: Math.floor(random() * 50) } : undefined,
    });
    for (let c = 0; c < (commentCounts[n] as number); c++) {
      const reuse = firstImage !== undefined && n > every && c === 0 && n % (every * 3) === 0;
      p.addComment(n, { user: pick(logins), body: reuse ? `Same as before: ![again](${firstImage})` : `${sentence(random, 3, 25)}.`, at: step(120) });
    }
    if (isPull) reviewPull(p, issue, { reviews: reviewsPerPull, comments: reviewCommentsPerPull, others, random, step });
    if (isPull) {
      const roll = random();
      if (roll < 0.6) p.mergeInternal(issue, pick(mergers), step());
      else if (roll < 0.75) p.closeInternal(issue, pick(mergers), step());
    } else {
      if (random() < 0.6) p.closeInternal(issue, random() < 0.5 ? author : pick(collaborators), step(), random() < 0.1 ? 'not_planned' : 'completed');
      if (n % 10 === 0) {
        p.addCommit({ message: `Fix ${issue.title.toLowerCase()} (refs #${n})`, author: pick(collaborators), at: step() });
        p.addEvent(issue, 'referenced', pick(collaborators), p.clock, { commit: p.mainTipKey() });
      }
    }
    if (releases > 0 && n % Math.max(1, Math.floor(total / releases)) === 0 && p.releases.length < releases) {
      const version = `v${p.releases.length + 1}.0.0`;
      p.addRelease({ tag: version, author: collaborators[0] as string, at: step(), assets: [{ name: `${p.repo.name}-${version}.zip`, contentType: 'application/zip', size: 5000 }, { name: 'SHA256SUMS', contentType: 'text/plain', size: 150 }] });
    }
  }
  if (releases > 0) {
    // The next version, not published yet (no random draw: the rest of the project stays as the seed made it).
    const version = `v${p.releases.length + 1}.0.0`;
    p.addRelease({ tag: version, author: collaborators[0] as string, draft: true, at: p.clock, assets: [{ name: `${p.repo.name}-${version}.zip`, contentType: 'application/zip', size: 4000 }] });
  }
  p.wikiHistory.push({ key: 'wiki:0', message: 'Initial Home page', author: collaborators[0] as string, at: step(), files: [{ path: 'Home.md', content: `# ${p.repo.name} wiki\n` }] });
  p.repo.updatedAt = p.clock;
  return p;
}

function reviewPull(p: FakeProject, issue: IssueRecord, plan: { reviews: number; comments: number; others: string[]; random: () => number; step: (max?: number) => number }): void {
  const { random } = plan;
  const states: ReviewState[] = ['COMMENTED', 'CHANGES_REQUESTED', 'APPROVED'];
  // Spread the exact number of review comments over the reviews; later reviews reply to earlier threads.
  const perReview = Array.from({ length: plan.reviews }, (_, i) => Math.floor(plan.comments / plan.reviews) + (i < plan.comments % plan.reviews ? 1 : 0));
  const roots: number[] = [];
  // Up to three reviewers from a random place in the list: the requested one reviews (and leaves the pending requests) only sometimes.
  const offset = Math.floor(random() * plan.others.length);
  for (let r = 0; r < plan.reviews; r++) {
    const user = plan.others[(offset + (r % 3)) % plan.others.length] as string;
    const comments = Array.from({ length: perReview[r] as number }, (_, i) => {
      const reply = roots.length > 0 && random() < 0.5 ? roots[Math.floor(random() * roots.length)] : undefined;
      return { path: `src/module${i % 4}.ts`, line: 1 + Math.floor(random() * 200), body: `${sentence(random, 3, 15)}.`, ...(reply !== undefined ? { inReplyTo: reply } : {}) };
    });
    const state = r === plan.reviews - 1 ? 'APPROVED' : (states[Math.floor(random() * 2)] as ReviewState);
    const made = p.submitReview(issue.number, { user, state, body: state === 'APPROVED' ? 'Looks good.' : '', at: plan.step(300), comments });
    for (const c of made.comments) if (c.inReplyTo === null) roots.push(c.id);
  }
}
