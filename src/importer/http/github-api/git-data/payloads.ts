import type { TreeEntry } from '../../../../git/cat-file.js';
import type { ChangedFile, GitPerson, ParsedCommit, RefEntry } from './mirror-git.js';

/*
 * GitHub's JSON for git data (the shapes of GitHub's OpenAPI description:
 * `commit`, `git-commit`, `git-ref`, `git-tree`, `blob`, `short-branch`,
 * `tag`, `content-file`, `diff-entry`), built from parsed git objects. API
 * links point at the copy (`repo.api`), web links at the forge
 * (`repo.web`, the repository's `html_url`).
 */

/** The repository the answers describe. */
export interface RepoLinks {
  /** The copy's API URL of the repository (`<copy>/github/repos/<owner>/<repo>`). */
  api: string;
  /** Its page on the forge (`html_url`). */
  web: string;
  /** GitHub's repository id (node ids name it). */
  id: number;
  owner: string;
  name: string;
}

/** A user as GitHub embeds one (`simple-user`), or null when no account has the commit's email. */
export type UserOf = (email: string) => Promise<Record<string, unknown> | null>;

export const UNSIGNED = { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null };

/** A legacy GitHub node id (`base64("<len>:<Type><id>")`): opaque to clients, stable per object. */
export function nodeId(type: string, key: string): string {
  const text = `${type}${key}`;
  return Buffer.from(`${String(type.length).padStart(2, '0')}:${text}`).toString('base64');
}

/** Base64 as GitHub's contents and blobs write it: lines of 60 characters, each ending in a newline. */
export function base64Lines(content: Buffer): string {
  const text = content.toString('base64');
  let out = '';
  for (let at = 0; at < text.length; at += 60) out += `${text.slice(at, at + 60)}\n`;
  return out;
}

/** `path` with each segment URL-encoded, its slashes kept. */
export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

function gitUser(person: GitPerson) {
  return { name: person.name, email: person.email, date: person.date };
}

/** A commit as `/commits` lists it (no `stats`, no `files`). */
export async function commitItem(repo: RepoLinks, commit: ParsedCommit, userOf: UserOf): Promise<Record<string, unknown>> {
  const url = `${repo.api}/commits/${commit.sha}`;
  const [author, committer] = await Promise.all([userOf(commit.author.email), userOf(commit.committer.email)]);
  return {
    sha: commit.sha,
    node_id: nodeId('Commit', `${repo.id}:${commit.sha}`),
    commit: {
      author: gitUser(commit.author),
      committer: gitUser(commit.committer),
      message: commit.message,
      tree: { sha: commit.tree, url: `${repo.api}/git/trees/${commit.tree}` },
      url: `${repo.api}/git/commits/${commit.sha}`,
      comment_count: 0,
      verification: UNSIGNED,
    },
    url,
    html_url: `${repo.web}/commit/${commit.sha}`,
    comments_url: `${url}/comments`,
    author,
    committer,
    parents: commit.parents.map((sha) => ({ sha, url: `${repo.api}/commits/${sha}`, html_url: `${repo.web}/commit/${sha}` })),
  };
}

/** A changed file as `diff-entry`. */
export function diffEntry(repo: RepoLinks, commitSha: string, file: ChangedFile): Record<string, unknown> {
  const path = encodePath(file.filename);
  return {
    sha: file.sha,
    filename: file.filename,
    status: file.status,
    additions: file.additions,
    deletions: file.deletions,
    changes: file.additions + file.deletions,
    blob_url: `${repo.web}/blob/${commitSha}/${path}`,
    raw_url: `${repo.web}/raw/${commitSha}/${path}`,
    contents_url: `${repo.api}/contents/${path}?ref=${commitSha}`,
    ...(file.patch !== undefined ? { patch: file.patch } : {}),
  };
}

/** A single commit (`/commits/{ref}`): the list item with `stats` and `files` (against its first parent). */
export async function commitDetail(repo: RepoLinks, commit: ParsedCommit, files: ChangedFile[], userOf: UserOf): Promise<Record<string, unknown>> {
  const additions = files.reduce((sum, file) => sum + file.additions, 0);
  const deletions = files.reduce((sum, file) => sum + file.deletions, 0);
  return {
    ...(await commitItem(repo, commit, userOf)),
    stats: { total: additions + deletions, additions, deletions },
    files: files.map((file) => diffEntry(repo, commit.sha, file)),
  };
}

/** A commit object as `/git/commits/{sha}` answers it. */
export function gitCommit(repo: RepoLinks, commit: ParsedCommit): Record<string, unknown> {
  return {
    sha: commit.sha,
    node_id: nodeId('Commit', `${repo.id}:${commit.sha}`),
    url: `${repo.api}/git/commits/${commit.sha}`,
    html_url: `${repo.web}/commit/${commit.sha}`,
    author: gitUser(commit.author),
    committer: gitUser(commit.committer),
    tree: { sha: commit.tree, url: `${repo.api}/git/trees/${commit.tree}` },
    message: commit.message,
    parents: commit.parents.map((sha) => ({ sha, url: `${repo.api}/git/commits/${sha}`, html_url: `${repo.web}/commit/${sha}` })),
    verification: UNSIGNED,
  };
}

const OBJECT_PATH = { commit: 'commits', tag: 'tags', tree: 'trees', blob: 'blobs' } as const;

/** A ref as `git-ref`. */
export function gitRef(repo: RepoLinks, entry: RefEntry): Record<string, unknown> {
  return {
    ref: entry.ref,
    node_id: nodeId('Ref', `${repo.id}:${entry.ref}`),
    url: `${repo.api}/git/${encodePath(entry.ref)}`,
    object: { sha: entry.sha, type: entry.type, url: `${repo.api}/git/${OBJECT_PATH[entry.type]}/${entry.sha}` },
  };
}

/** A tag as `/tags` lists it: the commit it peels to, and its archives. */
export function tagItem(repo: RepoLinks, name: string, commitSha: string): Record<string, unknown> {
  const ref = encodePath(name);
  return {
    name,
    zipball_url: `${repo.api}/zipball/refs/tags/${ref}`,
    tarball_url: `${repo.api}/tarball/refs/tags/${ref}`,
    commit: { sha: commitSha, url: `${repo.api}/commits/${commitSha}` },
    node_id: nodeId('Ref', `${repo.id}:refs/tags/${name}`),
  };
}

/** What a branch's `protection` field says, from its stored protection (`protected_branch`), as GitHub summarises it. */
export function protectionSummary(stored: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!stored) return { enabled: false, required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] } };
  const checks = (stored.required_status_checks ?? {}) as { contexts?: unknown; checks?: unknown };
  const admins = (stored.enforce_admins as { enabled?: unknown } | undefined)?.enabled === true;
  return {
    enabled: true,
    required_status_checks: { enforcement_level: admins ? 'everyone' : 'non_admins', contexts: checks.contexts ?? [], checks: checks.checks ?? [] },
  };
}

/** A branch as `/branches` lists it. */
export function branchItem(repo: RepoLinks, name: string, sha: string, stored: Record<string, unknown> | undefined): Record<string, unknown> {
  return {
    name,
    commit: { sha, url: `${repo.api}/commits/${sha}` },
    protected: stored !== undefined,
    protection: protectionSummary(stored),
    protection_url: `${repo.api}/branches/${encodeURIComponent(name)}/protection`,
  };
}

/** One branch (`/branches/{branch}`): its tip as a full commit item, and its links. */
export function branchDetail(repo: RepoLinks, name: string, commit: Record<string, unknown>, stored: Record<string, unknown> | undefined): Record<string, unknown> {
  return {
    name,
    commit,
    _links: { self: `${repo.api}/branches/${encodeURIComponent(name)}`, html: `${repo.web}/tree/${encodePath(name)}` },
    protected: stored !== undefined,
    protection: protectionSummary(stored),
    protection_url: `${repo.api}/branches/${encodeURIComponent(name)}/protection`,
  };
}

/** A tree entry's mode as GitHub writes it (six digits: `040000` for a tree). */
export function gitMode(mode: string): string {
  return mode.padStart(6, '0');
}

/** One entry of `/git/trees/{sha}` (`path` relative to the tree asked for). */
export function treeEntry(repo: RepoLinks, entry: TreeEntry, path: string, size: number | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { path, mode: gitMode(entry.mode), type: entry.type, sha: entry.oid };
  if (entry.type === 'blob') out.size = size ?? 0;
  if (entry.type !== 'commit') out.url = `${repo.api}/git/${entry.type === 'tree' ? 'trees' : 'blobs'}/${entry.oid}`;
  return out;
}

/** A blob as `/git/blobs/{sha}`. */
export function blobBody(repo: RepoLinks, sha: string, content: Buffer): Record<string, unknown> {
  return { sha, node_id: nodeId('Blob', `${repo.id}:${sha}`), size: content.length, url: `${repo.api}/git/blobs/${sha}`, content: base64Lines(content), encoding: 'base64' };
}
