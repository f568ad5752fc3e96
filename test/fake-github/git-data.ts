/**
 * The fake GitHub's git data (paths after `/repos/{owner}/{repo}`), computed
 * from its bare repository with the git CLI the way GitHub serves it:
 * branches, tags, refs, commits (with `sha`, `path`, `author`, `since`,
 * `until`), comparisons, a pull request's commits and files (its base sha
 * compared with `refs/pull/<n>/head`, as a comparison), commit/tree/blob objects, contents (base64 JSON,
 * directory lists, the `raw` and `object` media types), the README, and
 * archives (a 302 to a codeload-like path that answers `git archive`).
 * GitHub's errors: 404 for unknown refs, paths and objects, 422 for a
 * malformed blob sha or an unknown commit, 409 for an empty repository.
 * Read synchronously (git-read.ts): the fake's routes answer synchronously.
 */
import type { Json, Payloads } from './payloads.js';
import { pullOf, type FakeProject } from './project.js';
import type { Answer, Route } from './routes.js';
import { FakeGitReader, type Changed, type Commit, type Entry, type Person } from './git-read.js';

const DOCS = 'https://docs.github.com/enterprise-server@3.17/rest';
const UNSIGNED = { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null };

const error = (status: number, message: string, doc = DOCS): Answer => ({ kind: 'error', status, message, doc });
const enc = (path: string) => path.split('/').map(encodeURIComponent).join('/');
const b64 = (bytes: Buffer) => (bytes.toString('base64').match(/.{1,60}/g) ?? []).map((line) => `${line}\n`).join('');
const node = (type: string, key: string) => Buffer.from(`0${type.length}:${type}${key}`).toString('base64');

export class FakeGitData {
  constructor(private readonly project: FakeProject, private readonly payloads: Payloads, private readonly read: FakeGitReader) {}

  private get api() { return `${this.payloads.hosts.apiUrl}/repos/${this.project.repo.owner}/${this.project.repo.name}`; }
  private get web() { return `${this.payloads.hosts.webUrl}/${this.project.repo.owner}/${this.project.repo.name}`; }

  private user(email: string): Json | null {
    const login = /^(?:\d+\+)?([^@+]+)@users\.noreply\./i.exec(email)?.[1];
    // A deleted account's commits are linked to nobody (GitHub's ghost stands in for authors of issues and comments only).
    return login !== undefined && this.project.users.has(login) && !this.project.users.get(login)?.deleted ? this.payloads.user(login) : null;
  }

  private commitItem(c: Commit): Json {
    const url = `${this.api}/commits/${c.sha}`;
    const person = (p: Person) => ({ name: p.name, email: p.email, date: p.date });
    return {
      sha: c.sha, node_id: node('Commit', `${this.project.repo.id}:${c.sha}`),
      commit: { author: person(c.author), committer: person(c.committer), message: c.message, tree: { sha: c.tree, url: `${this.api}/git/trees/${c.tree}` }, url: `${this.api}/git/commits/${c.sha}`, comment_count: 0, verification: UNSIGNED },
      url, html_url: `${this.web}/commit/${c.sha}`, comments_url: `${url}/comments`, author: this.user(c.author.email), committer: this.user(c.committer.email),
      parents: c.parents.map((sha) => ({ sha, url: `${this.api}/commits/${sha}`, html_url: `${this.web}/commit/${sha}` })),
    };
  }

  private diffEntry(sha: string, f: Changed): Json {
    const path = enc(f.filename);
    return {
      sha: f.sha, filename: f.filename, status: f.status, additions: f.additions, deletions: f.deletions, changes: f.additions + f.deletions,
      blob_url: `${this.web}/blob/${sha}/${path}`, raw_url: `${this.web}/raw/${sha}/${path}`, contents_url: `${this.api}/contents/${path}?ref=${sha}`, ...(f.patch !== undefined ? { patch: f.patch } : {}),
    };
  }

  /** The routes of the git data, or undefined for any other path. */
  match(rest: string): Route | undefined {
    let m: RegExpExecArray | null;
    const route = (pathKind: string, run: (q: URLSearchParams, accept: string) => Answer): Route => ({
      pathKind, run: (q, ctx) => (this.read.empty() ? error(409, 'Git Repository is empty.') : run(q, ctx.accept)),
    });
    if ((m = /^\/branches\/(.+)$/.exec(rest)) && !rest.endsWith('/protection')) return route('branch', () => this.branch(decodeURIComponent(m?.[1] as string)));
    if (rest === '/tags') return route('tags', () => this.tags());
    if (rest === '/commits') return route('commits', (q) => this.history(q));
    if ((m = /^\/commits\/(.+)$/.exec(rest))) return route('commit', () => this.commit(decodeURIComponent(m?.[1] as string)));
    if ((m = /^\/compare\/(.+)$/.exec(rest))) return route('compare', () => this.compare(decodeURIComponent(m?.[1] as string)));
    if ((m = /^\/pulls\/(\d+)\/(commits|files)$/.exec(rest))) return route(`pull_${m[2]}`, () => this.pullRange(Number(m?.[1]), m?.[2] as 'commits' | 'files'));
    if ((m = /^\/git\/(refs|matching-refs|ref)(?:\/(.*))?$/.exec(rest))) return route('refs', () => this.refs(m?.[1] as string, decodeURIComponent(m?.[2] ?? '')));
    if ((m = /^\/git\/commits\/([^/]+)$/.exec(rest))) return route('git_commit', () => this.gitCommit(m?.[1] as string));
    if ((m = /^\/git\/trees\/([^/]+)$/.exec(rest))) return route('tree', (q) => this.tree(decodeURIComponent(m?.[1] as string), q.has('recursive')));
    if ((m = /^\/git\/blobs\/([^/]+)$/.exec(rest))) return route('blob', (_q, accept) => this.blob(m?.[1] as string, accept));
    if ((m = /^\/contents(?:\/(.*))?$/.exec(rest))) return route('contents', (q, accept) => this.contents(decodeURIComponent(m?.[1] ?? ''), q.get('ref'), accept));
    if ((m = /^\/readme(?:\/(.*))?$/.exec(rest))) return route('readme', (q, accept) => this.readme(decodeURIComponent(m?.[1] ?? ''), q.get('ref'), accept));
    if ((m = /^\/(tarball|zipball)(?:\/(.*))?$/.exec(rest))) return route('archive', () => this.archiveRedirect(m?.[1] as string, decodeURIComponent(m?.[2] ?? '')));
    if ((m = /^\/_codeload\/(tar\.gz|zip)\/([0-9a-f]{40})$/.exec(rest))) return route('codeload', () => this.archive(m?.[1] as 'tar.gz' | 'zip', m?.[2] as string));
    return undefined;
  }

  private branch(name: string): Answer {
    const sha = this.read.resolve(`refs/heads/${name}`);
    if (sha === undefined) return error(404, 'Branch not found', `${DOCS}/branches/branches#get-a-branch`);
    const record = this.project.branches.find((b) => b.name === name);
    const summary = record ? (this.payloads.branch(record) as Record<string, unknown>) : { protected: false, protection: { enabled: false, required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] } } };
    return {
      kind: 'object',
      body: {
        name, commit: this.commitItem(this.read.commits([sha])[0] as Commit), _links: { self: `${this.api}/branches/${encodeURIComponent(name)}`, html: `${this.web}/tree/${enc(name)}` },
        protected: summary.protected as boolean, protection: summary.protection as Json, protection_url: `${this.api}/branches/${encodeURIComponent(name)}/protection`,
      },
    };
  }

  private tags(): Answer {
    const lines = this.read.git(['for-each-ref', '--format=%(refname:strip=2) %(objectname) %(*objectname)', 'refs/tags']).toString('utf8').split('\n').filter(Boolean);
    const tags = lines.map((l) => l.split(' ')).map(([name, sha, peeled]) => ({ name: name as string, sha: peeled || (sha as string) }));
    tags.sort((a, b) => b.name.localeCompare(a.name, 'en', { numeric: true }));
    return {
      kind: 'list', capped: false, items: tags,
      render: ((t: { name: string; sha: string }) => ({
        name: t.name, zipball_url: `${this.api}/zipball/refs/tags/${enc(t.name)}`, tarball_url: `${this.api}/tarball/refs/tags/${enc(t.name)}`,
        commit: { sha: t.sha, url: `${this.api}/commits/${t.sha}` }, node_id: node('Ref', `${this.project.repo.id}:refs/tags/${t.name}`),
      })) as (item: never) => Json,
    };
  }

  private history(q: URLSearchParams): Answer {
    const start = this.read.resolve(q.get('sha') ?? this.project.repo.defaultBranch);
    if (start === undefined) return error(404, 'Not Found');
    const path = q.get('path');
    if (path !== null && (path.startsWith('/') || path.split('/').some((part) => part === '..' || part === '.'))) return { kind: 'list', capped: false, items: [], render: (() => ({})) as (item: never) => Json };
    const shas = this.read.git(['rev-list', '--end-of-options', start, '--', ...(path ? [path] : [])]).toString('utf8').split('\n').filter(Boolean);
    const author = q.get('author')?.toLowerCase();
    const committer = q.get('committer')?.toLowerCase();
    const by = (who: string | undefined, email: string) => who === undefined || (who.includes('@') ? email.toLowerCase() === who : this.user(email)?.login?.toString().toLowerCase() === who);
    const since = q.has('since') ? Date.parse(q.get('since') as string) : undefined;
    const until = q.has('until') ? Date.parse(q.get('until') as string) : undefined;
    const wanted = (c: Commit) => {
      if (!by(author, c.author.email) || !by(committer, c.committer.email)) return false;
      const at = Date.parse(c.committer.date);
      return (since === undefined || at >= since) && (until === undefined || at <= until);
    };
    const items = this.read.commits(shas).filter(wanted);
    return { kind: 'list', capped: false, items, render: ((c: Commit) => this.commitItem(c)) as (item: never) => Json };
  }

  private commit(ref: string): Answer {
    const sha = this.read.resolve(ref);
    if (sha === undefined) return error(422, `No commit found for SHA: ${ref}`, `${DOCS}/commits/commits#get-a-commit`);
    const c = this.read.commits([sha])[0] as Commit;
    const files = this.read.changes(c.parents[0], sha);
    const additions = files.reduce((s, f) => s + f.additions, 0);
    const deletions = files.reduce((s, f) => s + f.deletions, 0);
    return { kind: 'object', body: { ...(this.commitItem(c) as Record<string, Json>), stats: { total: additions + deletions, additions, deletions }, files: files.map((f) => this.diffEntry(sha, f)) } };
  }

  private compare(basehead: string): Answer {
    const [baseRef, headRef, extra] = basehead.split('...');
    if (!baseRef || !headRef || extra !== undefined) return error(404, 'Not Found');
    const base = this.read.resolve(baseRef);
    const head = this.read.resolve(headRef);
    if (base === undefined || head === undefined) return error(404, 'Not Found');
    const range = this.range(base, head);
    if (!range) return error(404, `No common ancestor between ${baseRef} and ${headRef}.`);
    const { mergeBase, ahead } = range;
    const behind = this.ahead(head, base);
    const status = ahead.length === 0 && behind.length === 0 ? 'identical' : behind.length === 0 ? 'ahead' : ahead.length === 0 ? 'behind' : 'diverged';
    const [baseCommit, mergeBaseCommit] = this.read.commits([base, mergeBase]) as [Commit, Commit];
    const web = `${this.web}/compare/${basehead}`;
    return {
      kind: 'object',
      body: {
        url: `${this.api}/compare/${basehead}`, html_url: web, permalink_url: `${this.web}/compare/${this.project.repo.owner}:${base}...${this.project.repo.owner}:${head}`,
        diff_url: `${web}.diff`, patch_url: `${web}.patch`, base_commit: this.commitItem(baseCommit), merge_base_commit: this.commitItem(mergeBaseCommit),
        status, ahead_by: ahead.length, behind_by: behind.length, total_commits: ahead.length,
        commits: this.read.commits(ahead.slice(0, 250)).map((c) => this.commitItem(c)), files: this.read.changes(mergeBase, head).map((f) => this.diffEntry(head, f)),
      },
    };
  }

  /** Commits reachable from `to` and not from `from`, oldest first. */
  private ahead(from: string, to: string): string[] {
    return this.read.git(['rev-list', '--reverse', to, `^${from}`]).toString('utf8').split('\n').filter(Boolean);
  }

  /** What a comparison reads: the merge base and the head side's commits; undefined when the histories share nothing. */
  private range(base: string, head: string): { mergeBase: string; ahead: string[] } | undefined {
    const mergeBase = this.read.tryGit(['merge-base', base, head])?.trim();
    return mergeBase ? { mergeBase, ahead: this.ahead(base, head) } : undefined;
  }

  /**
   * `/pulls/{n}/commits` and `/pulls/{n}/files`: the comparison of the pull request's base sha with
   * `refs/pull/<n>/head` — its head side's commits (oldest first, at most 250), the files from the merge base (at most 3000).
   */
  private pullRange(number: number, what: 'commits' | 'files'): Answer {
    const issue = this.project.byNumber.get(number);
    const doc = `${DOCS}/pulls/pulls#${what === 'commits' ? 'list-commits-on-a-pull-request' : 'list-pull-requests-files'}`;
    if (!issue?.pull) return error(404, 'Not Found', doc);
    const base = this.read.resolve(this.project.shaOf(pullOf(issue).baseKey));
    const head = this.read.resolve(`refs/pull/${number}/head`);
    const range = base === undefined || head === undefined ? undefined : this.range(base, head);
    if (!range || head === undefined) return error(404, 'Not Found', doc);
    if (what === 'commits') return { kind: 'list', capped: false, items: this.read.commits(range.ahead.slice(0, 250)), render: ((c: Commit) => this.commitItem(c)) as (item: never) => Json };
    return { kind: 'list', capped: false, items: this.read.changes(range.mergeBase, head).slice(0, 3000), render: ((f: Changed) => this.diffEntry(head, f)) as (item: never) => Json };
  }

  private refs(kind: string, wanted: string): Answer {
    const lines = this.read.git(['for-each-ref', '--format=%(refname) %(objectname) %(objecttype)', 'refs/']).toString('utf8').split('\n').filter(Boolean);
    const paths: Record<string, string> = { commit: 'commits', tag: 'tags', tree: 'trees', blob: 'blobs' };
    const all = lines.map((l) => l.split(' ') as [string, string, string]).map(([ref, sha, type]) => ({
      ref, node_id: node('Ref', `${this.project.repo.id}:${ref}`), url: `${this.api}/git/${enc(ref)}`, object: { sha, type, url: `${this.api}/git/${paths[type]}/${sha}` },
    }));
    const full = `refs/${wanted.replace(/^refs\//, '')}`;
    const exact = all.find((r) => r.ref === full);
    if (kind === 'ref') return exact ? { kind: 'object', body: exact } : error(404, 'Not Found', `${DOCS}/git/refs#get-a-reference`);
    if (kind === 'refs' && exact) return { kind: 'object', body: exact };
    const found = all.filter((r) => r.ref.startsWith(wanted === '' ? 'refs/' : full));
    if (kind === 'refs' && found.length === 0) return error(404, 'Not Found');
    return { kind: 'object', body: found };
  }

  private gitCommit(sha: string): Answer {
    const object = /^[0-9a-f]{40}$/.test(sha) ? this.read.objects([sha]).get(sha) : undefined;
    if (object?.type !== 'commit') return error(404, 'Not Found', `${DOCS}/git/commits#get-a-commit-object`);
    const c = this.read.commits([sha])[0] as Commit;
    const person = (p: Person) => ({ name: p.name, email: p.email, date: p.date });
    return {
      kind: 'object',
      body: {
        sha, node_id: node('Commit', `${this.project.repo.id}:${sha}`), url: `${this.api}/git/commits/${sha}`, html_url: `${this.web}/commit/${sha}`,
        author: person(c.author), committer: person(c.committer), tree: { sha: c.tree, url: `${this.api}/git/trees/${c.tree}` }, message: c.message,
        parents: c.parents.map((p) => ({ sha: p, url: `${this.api}/git/commits/${p}`, html_url: `${this.web}/commit/${p}` })), verification: UNSIGNED,
      },
    };
  }

  private tree(wanted: string, recursive: boolean): Answer {
    const sha = /^[0-9a-f]{40}$/.test(wanted) ? this.read.tryGit(['rev-parse', '--verify', '--quiet', `${wanted}^{tree}`])?.trim() : this.read.tryGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${wanted}^{tree}`])?.trim();
    const entries = sha ? this.read.entries(sha, recursive) : undefined;
    if (!sha || !entries) return error(404, 'Not Found', `${DOCS}/git/trees#get-a-tree`);
    const tree = entries.map((e) => ({
      path: e.path, mode: e.mode, type: e.type, sha: e.sha, ...(e.type === 'blob' ? { size: e.size } : {}),
      ...(e.type === 'commit' ? {} : { url: `${this.api}/git/${e.type === 'tree' ? 'trees' : 'blobs'}/${e.sha}` }),
    }));
    return { kind: 'object', body: { sha, url: `${this.api}/git/trees/${sha}`, tree, truncated: false } };
  }

  private raw(bytes: Buffer): Answer {
    return { kind: 'raw', status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'x-github-media-type': 'github.v3; param=raw' }, body: bytes };
  }

  private blob(sha: string, accept: string): Answer {
    if (!/^[0-9a-f]{40}$/.test(sha)) return error(422, 'The sha parameter must be exactly 40 characters and contain only [0-9a-f].', `${DOCS}/git/blobs#get-a-blob`);
    const object = this.read.objects([sha]).get(sha);
    if (object?.type !== 'blob') return error(404, 'Not Found', `${DOCS}/git/blobs#get-a-blob`);
    if (/vnd\.github(\.v3)?\.raw/.test(accept)) return this.raw(object.content);
    return { kind: 'object', body: { sha, node_id: node('Blob', `${this.project.repo.id}:${sha}`), size: object.content.length, url: `${this.api}/git/blobs/${sha}`, content: b64(object.content), encoding: 'base64' } };
  }

  private contentJson(ref: string, e: Entry, listed: boolean): Record<string, Json> {
    const type = e.type === 'tree' ? 'dir' : e.type === 'commit' ? 'submodule' : e.mode === '120000' ? (listed ? 'file' : 'symlink') : 'file';
    const path = enc(e.path);
    const url = `${this.api}/contents/${path}?ref=${encodeURIComponent(ref)}`;
    const git = type === 'submodule' ? null : `${this.api}/git/${type === 'dir' ? 'trees' : 'blobs'}/${e.sha}`;
    const html = type === 'submodule' ? null : `${this.web}/${type === 'dir' ? 'tree' : 'blob'}/${enc(ref)}/${path}`;
    const download = e.type === 'blob' ? `${this.web}/raw/${enc(ref)}/${path}` : null;
    return { name: e.path.split('/').pop() as string, path: e.path, sha: e.sha, size: e.type === 'blob' ? e.size : 0, url, git_url: git, html_url: html, download_url: download, _links: { self: url, git, html }, type };
  }

  private answerEntry(ref: string, commit: string, e: Entry, accept: string): Answer {
    if (e.type === 'tree') {
      const items = (this.read.entries(e.sha) ?? []).map((child) => this.contentJson(ref, { ...child, path: e.path === '' ? child.path : `${e.path}/${child.path}` }, true));
      if (/vnd\.github(\.v3)?\.object/.test(accept)) return { kind: 'object', body: { ...this.contentJson(ref, e, false), entries: items } };
      return { kind: 'object', body: items };
    }
    if (e.type === 'commit') {
      const { type: _t, ...rest } = this.contentJson(ref, e, false);
      return { kind: 'object', body: { type: 'submodule', submodule_git_url: null, ...rest } };
    }
    const bytes = this.read.objects([e.sha]).get(e.sha)?.content ?? Buffer.alloc(0);
    if (/vnd\.github(\.v3)?\.raw/.test(accept)) return this.raw(bytes);
    const { type, ...rest } = this.contentJson(ref, e, false);
    if (type === 'symlink') return { kind: 'object', body: { type: 'symlink', target: bytes.toString('utf8'), ...rest } };
    void commit;
    // Past 1 MiB GitHub leaves the content out (`encoding: "none"`): the raw media type or the blob has it.
    if (bytes.length > 1024 * 1024) return { kind: 'object', body: { type: 'file', encoding: 'none', ...rest, content: '' } };
    return { kind: 'object', body: { type: 'file', encoding: 'base64', ...rest, content: b64(bytes) } };
  }

  private contents(path: string, ref: string | null, accept: string): Answer {
    const name = ref ?? this.project.repo.defaultBranch;
    const commit = this.read.resolve(name);
    if (commit === undefined) return error(404, `No commit found for the ref ${name}`, `${DOCS}/repos/contents#get-repository-content`);
    const clean = path.split('/').filter(Boolean);
    if (clean.some((p) => p === '.' || p === '..')) return error(404, 'Not Found', `${DOCS}/repos/contents#get-repository-content`);
    const joined = clean.join('/');
    if (joined === '') {
      const root = this.read.git(['rev-parse', `${commit}^{tree}`]).toString('utf8').trim();
      return this.answerEntry(name, commit, { mode: '040000', type: 'tree', sha: root, size: 0, path: '' }, accept);
    }
    const entry = this.read.tryGit(['ls-tree', '-z', '-l', '--end-of-options', commit, '--', joined]);
    const found = entry?.split('\0').filter(Boolean).map((line) => {
      const [meta, p] = line.split('\t') as [string, string];
      const [mode, type, sha, size] = meta.split(/ +/) as [string, Entry['type'], string, string];
      return { mode, type, sha, size: size === '-' ? 0 : Number(size), path: p };
    }).find((e) => e.path === joined);
    if (!found) return error(404, 'Not Found', `${DOCS}/repos/contents#get-repository-content`);
    return this.answerEntry(name, commit, found, accept);
  }

  private readme(dir: string, ref: string | null, accept: string): Answer {
    const name = ref ?? this.project.repo.defaultBranch;
    const commit = this.read.resolve(name);
    if (commit === undefined) return error(404, `No commit found for the ref ${name}`, `${DOCS}/repos/contents#get-a-repository-readme`);
    const clean = dir.split('/').filter(Boolean).join('/');
    const entries = this.read.entries(clean === '' ? commit : `${commit}:${clean}`);
    const found = entries?.find((e) => e.type === 'blob' && /^readme(\.[^/]*)?$/i.test(e.path));
    if (!found) return error(404, 'Not Found', `${DOCS}/repos/contents#get-a-repository-readme`);
    return this.answerEntry(name, commit, { ...found, path: clean === '' ? found.path : `${clean}/${found.path}` }, accept);
  }

  private archiveRedirect(kind: string, ref: string): Answer {
    const sha = this.read.resolve(ref || this.project.repo.defaultBranch);
    if (sha === undefined) return error(404, 'Not Found', `${DOCS}/repos/contents#download-a-repository-archive-tar`);
    return { kind: 'redirect', location: `${this.api}/_codeload/${kind === 'zipball' ? 'zip' : 'tar.gz'}/${sha}` };
  }

  private archive(format: 'tar.gz' | 'zip', sha: string): Answer {
    const name = `${this.project.repo.owner}-${this.project.repo.name}-${sha.slice(0, 7)}`;
    const bytes = this.read.git(['archive', `--format=${format}`, `--prefix=${name}/`, sha]);
    return { kind: 'raw', status: 200, headers: { 'content-type': format === 'zip' ? 'application/zip' : 'application/x-gzip', 'content-disposition': `attachment; filename=${name}.${format}` }, body: bytes };
  }
}
