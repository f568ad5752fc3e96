// The large upstream of bench/snapshots.mjs, generated with one `git
// fast-import` stream written from Node.
//
// What it looks like (deterministic for a given seed, files and commits):
//  - ~files/30 directories (1000 for 30000 files) at depths 1–4 under a
//    handful of top-level directories (src, lib, test, docs, …), each directory
//    drawing its parent at random from those already made;
//  - files of 0.5–8 KiB (log-uniform: many small, few large; ~2.7 KiB on
//    average) of code-like text: indented lines of words drawn from a
//    2,000-word vocabulary with a Zipf-like skew, identifiers, numbers and
//    punctuation. It compresses (zlib) to roughly a third, in the range of real
//    source code, neither absurdly well nor like random bytes;
//  - commit 1 adds every file; then `commits` commits, each editing 4–16
//    existing files, mostly in one or two directories (a few lines replaced,
//    inserted or deleted per file, so versions delta well against each other
//    as in a real history), and now and then adding (8%) or deleting (8%) a
//    few files;
//  - a bare repository with `main` and HEAD → main, packed by `git gc`.
import { spawn } from 'node:child_process';
import { git, PLAIN_GIT_ENV } from './git-fleet.mjs';

/** A small, fast, seeded PRNG (mulberry32): floats in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = 'ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo ga ge go gu ha he hi ho ka ke ki ko la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ze zo tra pre sto bri ver lan mon dor fel ix ul an en in on um ar er or'.split(' ');
const KEYWORDS = 'const let return if else for while function import export from class new this await async true false null undefined throw try catch case break default switch typeof of in'.split(' ');
const TOP_DIRS = ['src', 'lib', 'test', 'docs', 'tools', 'packages', 'examples', 'scripts'];
const EXTENSIONS = ['ts', 'ts', 'ts', 'js', 'js', 'json', 'md', 'py', 'go', 'c', 'h', 'yml', 'css'];
const PEOPLE = ['Ada Lovelace <ada@example.com>', 'Alan Turing <alan@example.com>', 'Grace Hopper <grace@example.com>', 'Edsger Dijkstra <edsger@example.com>', 'Barbara Liskov <barbara@example.com>'];

/** Text generator over a fixed vocabulary. */
class Text {
  constructor(random) {
    this.random = random;
    const words = new Set();
    while (words.size < 2000) {
      const n = 1 + Math.floor(random() * 3);
      let word = '';
      for (let i = 0; i < n; i++) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
      words.add(word);
    }
    this.vocabulary = [...words];
  }
  /** A word, skewed towards the start of the vocabulary (Zipf-like). */
  word() {
    const u = this.random();
    return this.vocabulary[Math.floor(this.vocabulary.length * u * u * u)];
  }
  identifier() {
    const r = this.random();
    if (r < 0.5) return this.word();
    if (r < 0.8) return `${this.word()}${capitalise(this.word())}`;
    return `${this.word()}_${this.word()}`;
  }
  /** One line of code-like text (no newline). */
  line() {
    const r = this.random();
    const indent = '  '.repeat(Math.floor(this.random() * this.random() * 5));
    if (r < 0.08) return '';
    if (r < 0.18) return `${indent}// ${this.sentence(4 + Math.floor(this.random() * 9))}`;
    if (r < 0.4) return `${indent}${this.pick(KEYWORDS)} ${this.identifier()} = ${this.identifier()}(${this.args()});`;
    if (r < 0.55) return `${indent}${this.pick(KEYWORDS)} (${this.identifier()} ${this.pick(['===', '<', '>', '!==', '&&', '||'])} ${this.value()}) {`;
    if (r < 0.65) return `${indent}}`;
    if (r < 0.8) return `${indent}${this.identifier()}.${this.identifier()}(${this.args()});`;
    return `${indent}${this.identifier()}: ${this.value()}, ${this.identifier()}: ${this.value()},`;
  }
  sentence(n) {
    const words = [];
    for (let i = 0; i < n; i++) words.push(this.word());
    return words.join(' ');
  }
  args() {
    const n = Math.floor(this.random() * 4);
    const out = [];
    for (let i = 0; i < n; i++) out.push(this.value());
    return out.join(', ');
  }
  value() {
    const r = this.random();
    if (r < 0.25) return String(Math.floor(this.random() * 10000));
    if (r < 0.4) return `'${this.sentence(1 + Math.floor(this.random() * 3))}'`;
    return this.identifier();
  }
  pick(list) {
    return list[Math.floor(this.random() * list.length)];
  }
  /** Lines of about `bytes` bytes in total. */
  lines(bytes) {
    const out = [];
    let size = 0;
    while (size < bytes) {
      const line = this.line();
      out.push(line);
      size += line.length + 1;
    }
    return out;
  }
}

const capitalise = (word) => word[0].toUpperCase() + word.slice(1);

/**
 * Writes the repository into a new bare repository `dir` (git init, fast-import,
 * gc). `onProgress(text)` is called now and then. Resolves with stats.
 */
export async function generateRepository(dir, { files, commits, seed = 1, onProgress = () => {} }) {
  const random = prng(seed);
  const text = new Text(random);
  const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
  const fileSize = () => Math.round(512 * 16 ** random());

  // Directory tree.
  const dirs = TOP_DIRS.map((name) => ({ path: name, depth: 1 }));
  const dirPaths = new Set(TOP_DIRS);
  const dirCount = Math.max(TOP_DIRS.length, Math.round(files / 30));
  while (dirs.length < dirCount) {
    const parent = dirs[Math.floor(random() * dirs.length)];
    if (parent.depth >= 4) continue;
    const path = `${parent.path}/${text.word()}`;
    if (dirPaths.has(path)) continue;
    dirPaths.add(path);
    dirs.push({ path, depth: parent.depth + 1 });
  }

  // Live files: path → lines; `paths` for random picks (swap-remove on delete).
  const content = new Map();
  const paths = [];
  const byDir = new Map(dirs.map((d) => [d.path, []]));
  const newPath = (dir) => {
    for (;;) {
      const name = random() < 0.5 ? text.word() : `${text.word()}-${text.word()}`;
      const path = `${dir}/${name}.${text.pick(EXTENSIONS)}`;
      if (!content.has(path)) return path;
    }
  };
  const addFile = (dir) => {
    const path = newPath(dir);
    content.set(path, text.lines(fileSize()));
    paths.push(path);
    byDir.get(dir).push(path);
    return path;
  };
  const deleteFile = (path) => {
    content.delete(path);
    const i = paths.indexOf(path);
    paths[i] = paths[paths.length - 1];
    paths.pop();
    const list = byDir.get(path.slice(0, path.lastIndexOf('/')));
    list.splice(list.indexOf(path), 1);
  };
  const editFile = (path) => {
    const lines = content.get(path);
    const edits = int(1, 4);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(random() * (lines.length + 1));
      const r = random();
      if (r < 0.45 && at < lines.length) lines.splice(at, int(1, 3), ...text.lines(int(20, 200)));
      else if (r < 0.8) lines.splice(at, 0, ...text.lines(int(20, 300)));
      else if (lines.length > 5) lines.splice(Math.min(at, lines.length - 1), int(1, 3));
    }
  };

  await git(['init', '--quiet', '--bare', '--initial-branch=main', dir]);
  const importer = spawn('git', [`--git-dir=${dir}`, 'fast-import', '--quiet', '--done'], {
    env: PLAIN_GIT_ENV,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  importer.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve, reject) => {
    importer.on('error', reject);
    importer.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}: ${stderr.trim()}`))));
  });

  // Buffered writes with backpressure.
  let chunks = [];
  let pending = 0;
  const write = async (text) => {
    chunks.push(text);
    pending += text.length;
    if (pending < 1 << 20) return;
    const ok = importer.stdin.write(chunks.join(''));
    chunks = [];
    pending = 0;
    if (!ok) await new Promise((resolve) => importer.stdin.once('drain', resolve));
  };
  const data = (body) => `data ${Buffer.byteLength(body)}\n${body}\n`;
  const modify = (path) => `M 100644 inline ${path}\n${data(content.get(path).join('\n') + '\n')}`;
  let clock = 1_600_000_000;
  const header = (message) => {
    const person = text.pick(PEOPLE);
    clock += int(60, 6 * 3600);
    return `commit refs/heads/main\nauthor ${person} ${clock} +0000\ncommitter ${person} ${clock} +0000\n${data(message)}`;
  };

  // Commit 1: every file.
  for (let i = 0; i < files; i++) addFile(dirs[Math.floor(random() * dirs.length)].path);
  await write(header('Initial import\n'));
  for (const path of paths) await write(modify(path));
  await write('\n');

  for (let c = 1; c <= commits; c++) {
    if (c % 100 === 0) onProgress(`generating commit ${c}/${commits}`);
    const changed = new Set();
    const deleted = [];
    // Mostly one or two directories per commit, as real changes cluster.
    const homes = [paths[Math.floor(random() * paths.length)], paths[Math.floor(random() * paths.length)]].map((p) =>
      p.slice(0, p.lastIndexOf('/')),
    );
    const edits = int(4, 16);
    for (let k = 0; k < edits; k++) {
      const pool = random() < 0.75 ? byDir.get(homes[k % 2]) : paths;
      if (pool.length) changed.add(pool[Math.floor(random() * pool.length)]);
    }
    for (const path of changed) editFile(path);
    if (random() < 0.08) for (let k = int(1, 4); k > 0; k--) changed.add(addFile(homes[0]));
    if (random() < 0.08) {
      for (let k = int(1, 4); k > 0; k--) {
        const path = paths[Math.floor(random() * paths.length)];
        if (changed.has(path)) continue;
        deleteFile(path);
        deleted.push(path);
      }
    }
    await write(header(`${text.pick(['Fix', 'Add', 'Refactor', 'Update', 'Remove', 'Document'])} ${text.sentence(int(2, 6))}\n\n${text.sentence(int(0, 20))}\n`));
    for (const path of changed) await write(modify(path));
    for (const path of deleted) await write(`D ${path}\n`);
    await write('\n');
  }
  await write('done\n');
  importer.stdin.end(chunks.join(''));
  await exited;

  onProgress('git gc');
  // -f-less repack would keep fast-import's deltas (each blob against the blob
  // written just before it, an unrelated file); compute real ones, then gc.
  await git([`--git-dir=${dir}`, 'repack', '-a', '-d', '-f', '-q']);
  await git([`--git-dir=${dir}`, 'gc', '--quiet']);
  return await repositoryStats(dir);
}

/** Files at HEAD, commits on main, tree bytes, pack size. */
export async function repositoryStats(dir) {
  const tree = await git([`--git-dir=${dir}`, 'ls-tree', '-r', '-l', '--full-tree', 'main']);
  let filesAtHead = 0;
  let treeBytes = 0;
  for (const line of tree.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab === -1) continue;
    filesAtHead++;
    treeBytes += Number(line.slice(0, tab).trim().split(/\s+/)[3]) || 0;
  }
  const commits = Number((await git([`--git-dir=${dir}`, 'rev-list', '--count', 'main'])).trim());
  const counts = Object.fromEntries(
    (await git([`--git-dir=${dir}`, 'count-objects', '-v']))
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(': ')),
  );
  const directories = Number(
    (await git([`--git-dir=${dir}`, 'ls-tree', '-r', '-d', '--full-tree', '--name-only', 'main'])).split('\n').filter(Boolean).length,
  );
  return {
    filesAtHead,
    directories,
    treeBytes,
    commits,
    objects: Number(counts['in-pack'] ?? 0) + Number(counts.count ?? 0),
    packs: Number(counts.packs ?? 0),
    packBytes: Number(counts['size-pack'] ?? 0) * 1024,
  };
}
