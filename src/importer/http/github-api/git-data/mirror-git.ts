import { CatFile, parseTree, type GitObject, type TreeEntry } from '../../../../git/cat-file.js';
import { GitCommandError } from '../../../../git/errors.js';
import type { GitProcess, GitRunner } from '../../../../git/runner.js';
import { InvalidSnapshotRequestError, isObjectId, validateRevision, validateTreePath } from '../../../../snapshots/api.js';

/*
 * Reads of one import's mirror (a bare repository, its served view) for the
 * git-data routes: objects through one long-lived `git cat-file
 * --batch-command` per mirror, history and refs through the hardened runner
 * (`rev-list`, `for-each-ref`, `diff-tree`, `archive`), never a working tree.
 * Every revision and path a caller gives is validated first
 * (snapshots/revision.ts) and handed to git after `--end-of-options`, so no
 * input can become an option.
 */

/** A person line of a commit: who, and when (ISO 8601 in UTC, as GitHub writes it). */
export interface GitPerson {
  name: string;
  email: string;
  date: string;
}

/** A commit object, parsed. */
export interface ParsedCommit {
  sha: string;
  tree: string;
  parents: string[];
  author: GitPerson;
  committer: GitPerson;
  message: string;
}

/** One ref and the object it points at. */
export interface RefEntry {
  ref: string;
  sha: string;
  type: 'commit' | 'tag' | 'tree' | 'blob';
  /** For an annotated tag: the commit it peels to. */
  peeled?: string;
}

/** A file changed between two commits, with its line counts and patch (when text). */
export interface ChangedFile {
  filename: string;
  previousFilename?: string;
  status: 'added' | 'removed' | 'modified' | 'renamed';
  sha: string;
  additions: number;
  deletions: number;
  patch?: string;
}

/** Filters of a commit listing (`/commits`). */
export interface HistoryQuery {
  start: string;
  path?: string | undefined;
  /** A login (matched on GitHub's noreply addresses) or an email. */
  author?: string | undefined;
  /** The same for the committer. */
  committer?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  skip: number;
  maxCount: number;
}

/** Patches of files above this many bytes are left out, as GitHub leaves out large diffs. */
const MAX_PATCH_BYTES = 1024 * 1024;

function person(line: string): GitPerson {
  const match = /^(.*) <(.*)> (-?\d+) ([+-]\d{4})$/.exec(line);
  if (!match) return { name: line, email: '', date: new Date(0).toISOString().replace('.000Z', 'Z') };
  return { name: match[1] as string, email: match[2] as string, date: new Date(Number(match[3]) * 1000).toISOString().replace('.000Z', 'Z') };
}

/** Parses a raw commit object. */
export function parseCommit(sha: string, content: Buffer): ParsedCommit {
  const text = content.toString('utf8');
  const split = text.indexOf('\n\n');
  const headers = (split < 0 ? text : text.slice(0, split)).split('\n');
  const commit: ParsedCommit = { sha, tree: '', parents: [], author: person(''), committer: person(''), message: split < 0 ? '' : text.slice(split + 2) };
  for (const line of headers) {
    const space = line.indexOf(' ');
    const [key, value] = [line.slice(0, space), line.slice(space + 1)];
    if (key === 'tree') commit.tree = value;
    else if (key === 'parent') commit.parents.push(value);
    else if (key === 'author') commit.author = person(value);
    else if (key === 'committer') commit.committer = person(value);
  }
  // GitHub shows the message without git's trailing newline.
  commit.message = commit.message.replace(/\n$/, '');
  return commit;
}

/** `text` as a literal in a POSIX extended regular expression. */
function literal(text: string): string {
  return text.replace(/[.[\]{}()*+?^$|\\]/g, '\\$&');
}

/** The `--author` (or `--committer`) pattern for GitHub's `author` (`committer`) filter: an email as it is, a login as its noreply addresses. */
export function authorPattern(author: string): string {
  if (author.includes('@')) return `<${literal(author)}>`;
  return `<([0-9]+\\+)?${literal(author)}@users\\.noreply\\.github\\.com>`;
}

/** The mirror of one import, read without materialising anything. */
export class MirrorGit {
  constructor(
    private readonly runner: GitRunner,
    private readonly catFile: CatFile,
    readonly gitDir: string,
  ) {}

  /** The commit `revision` (branch, tag, full ref or sha) names; undefined when none. @throws InvalidSnapshotRequestError */
  async resolveCommit(revision: string): Promise<string | undefined> {
    const valid = validateRevision(revision);
    return (await this.catFile.info(`${valid}^{commit}`))?.oid;
  }

  /** The commit `ref` names; undefined for an unknown ref and for one that is no valid ref at all (hostile input included). */
  async commitNamed(ref: string): Promise<string | undefined> {
    try {
      return await this.resolveCommit(ref);
    } catch (error) {
      if (error instanceof InvalidSnapshotRequestError) return undefined;
      throw error;
    }
  }

  /** Whether the repository has no refs at all (GitHub: 409 "Git Repository is empty."). */
  async isEmpty(): Promise<boolean> {
    const { stdout } = await this.#git(['for-each-ref', '--count=1', '--format=%(refname)']);
    return stdout.trim() === '';
  }

  /** The object `sha` (a full id) with its content; undefined when absent. */
  async object(sha: string): Promise<GitObject | undefined> {
    if (!isObjectId(sha)) return undefined;
    return this.catFile.contents(sha);
  }

  async commit(sha: string): Promise<ParsedCommit | undefined> {
    const object = await this.object(sha);
    return object?.type === 'commit' && object.content ? parseCommit(object.oid, object.content) : undefined;
  }

  /** A tree's entries; undefined when `sha` is no tree (a commit's sha reads its tree, as GitHub does). */
  async tree(sha: string): Promise<{ sha: string; entries: TreeEntry[] } | undefined> {
    if (!isObjectId(sha)) return undefined;
    const object = await this.catFile.contents(`${sha}^{tree}`);
    return object?.type === 'tree' && object.content ? { sha: object.oid, entries: parseTree(object.content, object.oid.length) } : undefined;
  }

  /** The object at `path` ('' for the root tree) of commit `commit`; undefined when absent. @throws InvalidSnapshotRequestError */
  async at(commit: string, path: string): Promise<GitObject | undefined> {
    const clean = validateTreePath(path);
    return this.catFile.contents(clean === '' ? `${commit}^{tree}` : `${commit}:${clean}`);
  }

  /** Sizes of the blobs `oids`, in one request each on the long-lived process. */
  async sizes(oids: string[]): Promise<Map<string, number>> {
    const sizes = new Map<string, number>();
    for (const object of await Promise.all(oids.map((oid) => this.catFile.info(oid)))) if (object) sizes.set(object.oid, object.size);
    return sizes;
  }

  /** Refs below `prefixes` (`refs/heads/`…), sorted by name, with annotated tags peeled. */
  async refs(prefixes: string[]): Promise<RefEntry[]> {
    const { stdout } = await this.#git(['for-each-ref', '--format=%(objectname) %(objecttype) %(*objectname) %(refname)', '--end-of-options', ...prefixes]);
    return stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [sha, type, peeled, ...name] = line.split(' ');
        const entry: RefEntry = { ref: name.join(' '), sha: sha as string, type: type as RefEntry['type'] };
        if (peeled) entry.peeled = peeled;
        return entry;
      });
  }

  /** One page of history (`rev-list --skip --max-count`: a page reads only the commits up to it). */
  async history(query: HistoryQuery): Promise<string[]> {
    const args = ['rev-list', `--max-count=${query.maxCount}`, `--skip=${query.skip}`];
    if (query.author !== undefined || query.committer !== undefined) args.push('--extended-regexp', '--regexp-ignore-case');
    if (query.author !== undefined) args.push(`--author=${authorPattern(query.author)}`);
    if (query.committer !== undefined) args.push(`--committer=${authorPattern(query.committer)}`);
    if (query.since !== undefined) args.push(`--since=${query.since}`);
    if (query.until !== undefined) args.push(`--until=${query.until}`);
    args.push('--end-of-options', query.start, '--');
    if (query.path !== undefined && query.path !== '') args.push(validateTreePath(query.path));
    const { stdout } = await this.#git(args);
    return stdout.split('\n').filter(Boolean);
  }

  /** The first `max` commits reachable from `head` and not from `base`, oldest first (a comparison's first page); and how many there are. */
  async between(base: string, head: string, max: number): Promise<{ shas: string[]; total: number }> {
    const { stdout } = await this.#git(['rev-list', '--reverse', '--end-of-options', head, `^${base}`]);
    const all = stdout.split('\n').filter(Boolean);
    return { shas: all.slice(0, max), total: all.length };
  }

  /** How many commits are reachable from `head` and not from `base`. */
  async count(base: string, head: string): Promise<number> {
    const { stdout } = await this.#git(['rev-list', '--count', '--end-of-options', head, `^${base}`]);
    return Number(stdout.trim());
  }

  /** The best common ancestor of two commits; undefined when they share no history. */
  async mergeBase(a: string, b: string): Promise<string | undefined> {
    try {
      const { stdout } = await this.#git(['merge-base', '--end-of-options', a, b]);
      return stdout.trim() || undefined;
    } catch (error) {
      if (error instanceof GitCommandError) return undefined;
      throw error;
    }
  }

  /** Files changed from `from` (undefined: the empty tree, a root commit) to `to`, with counts and patches. */
  async changes(from: string | undefined, to: string): Promise<ChangedFile[]> {
    const range = from === undefined ? [to] : [from, to];
    const common = ['diff-tree', '-r', '--no-renames', '--no-color', '--full-index', ...(from === undefined ? ['--root'] : [])];
    const [raw, patch] = await Promise.all([
      this.#git([...common, '-z', '--raw', '--numstat', '--end-of-options', ...range]),
      this.#git([...common, '-p', '--end-of-options', ...range]),
    ]);
    return mergeChanges(raw.stdout, patch.stdout, from === undefined);
  }

  /** Starts `git archive` of commit `sha` (`tar.gz` or `zip`), every path below `prefix`; the caller streams stdout. */
  archive(sha: string, format: 'tar.gz' | 'zip', prefix: string): GitProcess {
    if (!isObjectId(sha) || /[\0\n]/.test(prefix) || prefix.startsWith('-')) throw new InvalidSnapshotRequestError('not an archivable commit');
    // Stopped by the caller when its client goes away, and in any case after the runner's time limit.
    return this.runner.start([`--git-dir=${this.gitDir}`, 'archive', `--format=${format}`, `--prefix=${prefix}`, '--end-of-options', sha], { timeoutMs: this.runner.defaultTimeoutMs });
  }

  #git(args: string[]) {
    return this.runner.run([`--git-dir=${this.gitDir}`, ...args]);
  }
}

/**
 * Joins `diff-tree -z --raw --numstat` (statuses, blob ids, counts) and the
 * patch text (`-p`) into one entry per file. A root commit's output starts
 * with its own id, which is skipped.
 */
function mergeChanges(rawZ: string, patchText: string, root: boolean): ChangedFile[] {
  const fields = rawZ.split('\0');
  if (root && /^[0-9a-f]{40,64}$/.test(fields[0] ?? '')) fields.shift();
  const files: ChangedFile[] = [];
  const byName = new Map<string, ChangedFile>();
  let index = 0;
  while (index < fields.length) {
    const field = fields[index] as string;
    if (field.startsWith(':')) {
      const [, , oldSha, newSha, status] = field.slice(1).split(' ');
      const filename = fields[index + 1] as string;
      const kind = status === 'A' ? 'added' : status === 'D' ? 'removed' : 'modified';
      const file: ChangedFile = { filename, status: kind, sha: (kind === 'removed' ? oldSha : newSha) as string, additions: 0, deletions: 0 };
      files.push(file);
      byName.set(filename, file);
      index += 2;
    } else if (/^(\d+|-)\t(\d+|-)\t/.test(field)) {
      const [added, deleted, name] = field.split('\t');
      const file = byName.get(name as string);
      if (file) [file.additions, file.deletions] = [Number(added) || 0, Number(deleted) || 0];
      index += 1;
    } else {
      index += 1;
    }
  }
  for (const section of patchText.split(/^diff --git /m).slice(1)) {
    const hunk = section.indexOf('\n@@');
    const name = /^\+\+\+ b\/(.*)$/m.exec(section)?.[1] ?? /^--- a\/(.*)$/m.exec(section)?.[1];
    const file = name === undefined ? undefined : byName.get(name);
    if (file && hunk >= 0 && section.length - hunk < MAX_PATCH_BYTES) file.patch = section.slice(hunk + 1).replace(/\n$/, '');
  }
  return files;
}
