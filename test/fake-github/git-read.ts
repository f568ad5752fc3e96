/**
 * How the fake GitHub reads its bare repository for the git data
 * (git-data.ts): the git CLI, synchronously (the fake's routes answer
 * synchronously) — refs resolved with `rev-parse`, objects with one
 * `cat-file --batch`, trees with `ls-tree`, changes with `diff-tree`.
 */
import { execFileSync } from 'node:child_process';

const ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LANG: 'C' };

export interface Person { name: string; email: string; date: string }
export interface Commit { sha: string; tree: string; parents: string[]; author: Person; committer: Person; message: string }
export interface Entry { mode: string; type: 'blob' | 'tree' | 'commit'; sha: string; size: number; path: string }
export interface Changed { filename: string; status: string; sha: string; additions: number; deletions: number; patch?: string }

export class FakeGitReader {
  /** Outputs kept by command, for one version of the repository (see `version`). */
  readonly #outputs = new Map<string, Buffer>();
  #outputsOf: number | undefined;

  /**
   * `version`, when given, names the repository's current state (the
   * project's version): git's outputs are then kept until it changes, so a
   * benchmark's fake answers from memory instead of spawning git each time.
   */
  constructor(private readonly gitDir: string, private readonly version?: () => number) {}

  git(args: string[], input?: string): Buffer {
    const run = () => execFileSync('git', [`--git-dir=${this.gitDir}`, ...args], { env: ENV, input: input ?? '', maxBuffer: 512 * 1024 * 1024, stdio: ['pipe', 'pipe', 'ignore'] });
    if (!this.version) return run();
    if (this.#outputsOf !== this.version()) {
      this.#outputs.clear();
      this.#outputsOf = this.version();
    }
    const key = JSON.stringify([args, input ?? '']);
    let output = this.#outputs.get(key);
    if (output === undefined) this.#outputs.set(key, (output = run()));
    return output;
  }

  tryGit(args: string[]): string | undefined {
    try { return this.git(args).toString('utf8'); } catch { return undefined; }
  }

  resolve(ref: string): string | undefined {
    return this.tryGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`])?.trim() || undefined;
  }

  empty(): boolean {
    return this.git(['for-each-ref', '--count=1']).length === 0;
  }

  /** Raw objects by id, in one `cat-file --batch`. */
  objects(shas: string[]): Map<string, { type: string; content: Buffer }> {
    const out = this.git(['cat-file', '--batch'], shas.map((s) => `${s}\n`).join(''));
    const found = new Map<string, { type: string; content: Buffer }>();
    let at = 0;
    for (const sha of shas) {
      const eol = out.indexOf(10, at);
      const [oid, type, size] = out.subarray(at, eol).toString().split(' ');
      if (type === 'missing' || size === undefined) { at = eol + 1; continue; }
      found.set(sha, { type: type as string, content: out.subarray(eol + 1, eol + 1 + Number(size)) });
      at = eol + 1 + Number(size) + 1;
      void oid;
    }
    return found;
  }

  commits(shas: string[]): Commit[] {
    const raw = this.objects(shas);
    return shas.map((sha) => {
      const text = raw.get(sha)?.content.toString('utf8') ?? '';
      const [head, ...body] = text.split('\n\n');
      const who = (line: string): Person => {
        const m = /^(.*) <(.*)> (\d+) [+-]\d{4}$/.exec(line) as RegExpExecArray;
        return { name: m[1] as string, email: m[2] as string, date: new Date(Number(m[3]) * 1000).toISOString().replace('.000Z', 'Z') };
      };
      const lines = (head ?? '').split('\n');
      const value = (key: string) => lines.filter((l) => l.startsWith(`${key} `)).map((l) => l.slice(key.length + 1));
      return { sha, tree: value('tree')[0] as string, parents: value('parent'), author: who(value('author')[0] as string), committer: who(value('committer')[0] as string), message: body.join('\n\n').replace(/\n$/, '') };
    });
  }

  changes(from: string | undefined, to: string): Changed[] {
    const range = from === undefined ? ['--root', to] : [from, to];
    const numstat = this.git(['diff-tree', '-r', '--no-renames', '--numstat', '--raw', '--full-index', ...range]).toString('utf8').split('\n');
    const patch = this.git(['diff-tree', '-r', '--no-renames', '--full-index', '-p', ...range]).toString('utf8');
    const files: Changed[] = [];
    for (const line of numstat) {
      const raw = /^:\d+ \d+ ([0-9a-f]+) ([0-9a-f]+) ([AMD])\t(.*)$/.exec(line);
      if (raw) files.push({ filename: raw[4] as string, status: raw[3] === 'A' ? 'added' : raw[3] === 'D' ? 'removed' : 'modified', sha: (raw[3] === 'D' ? raw[1] : raw[2]) as string, additions: 0, deletions: 0 });
      const counts = /^(\d+|-)\t(\d+|-)\t(.*)$/.exec(line);
      const file = counts ? files.find((f) => f.filename === counts[3]) : undefined;
      if (file && counts) [file.additions, file.deletions] = [Number(counts[1]) || 0, Number(counts[2]) || 0];
    }
    for (const section of patch.split(/^diff --git /m).slice(1)) {
      const name = /^\+\+\+ b\/(.*)$/m.exec(section)?.[1] ?? /^--- a\/(.*)$/m.exec(section)?.[1];
      const file = files.find((f) => f.filename === name);
      const hunk = section.indexOf('\n@@');
      // GitHub leaves out the patch of a very large diff.
      if (file && hunk >= 0 && section.length - hunk < 1024 * 1024) file.patch = section.slice(hunk + 1).replace(/\n$/, '');
    }
    return files;
  }

  /** Entries of a tree (`ls-tree -l`), recursive (`-r -t`: a directory, then what is in it) when asked. */
  entries(treeish: string, recursive = false): Entry[] | undefined {
    const out = this.tryGit(['ls-tree', '-z', '-l', ...(recursive ? ['-r', '-t'] : []), '--end-of-options', treeish]);
    if (out === undefined) return undefined;
    return out.split('\0').filter(Boolean).map((line) => {
      const [meta, path] = line.split('\t') as [string, string];
      const [mode, type, sha, size] = meta.split(/ +/) as [string, Entry['type'], string, string];
      return { mode, type, sha, size: size === '-' ? 0 : Number(size), path };
    });
  }
}
