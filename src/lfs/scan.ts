import { createInterface } from 'node:readline';
import { CatFile } from '../git/cat-file.js';
import { GitError } from '../git/errors.js';
import type { GitProcess, GitRunner } from '../git/runner.js';
import { MAX_POINTER_BYTES, MIN_POINTER_BYTES, parsePointer, type LfsPointer } from './pointer.js';

/** Blobs read at once from the one cat-file process. */
const READ_CHUNK = 256;

export interface ScanRequest {
  /** Objects (ref tips) whose history is looked at. */
  tips: readonly string[];
  /** Objects whose history was looked at before: left out (missing ones ignored, e.g. pruned since). */
  scanned: readonly string[];
  signal: AbortSignal;
  timeoutMs: number;
}

/** What a scan found: the pointers (each oid once), and the blobs that began like a pointer but were not one. */
export interface ScanResult {
  pointers: LfsPointer[];
  invalid: { blob: string; reason: string }[];
}

/**
 * The LFS pointers reachable from `tips` and not from `scanned`, in the
 * bare repository `gitDir`: `git rev-list --objects` of the new history
 * (blobs of 1024 bytes or more filtered out by git itself) streamed into
 * `git cat-file --batch-check`, so that only small blobs are kept, then each
 * of those read and parsed. A pointer is recognised by its content, as
 * git-lfs's own scanner does (`git lfs fetch --all`): .gitattributes are
 * not consulted (see lfs/replicate.ts for why). Nothing is held but the
 * small blobs' ids; git runs through the runner, without network.
 * @throws GitError when git fails; the signal's reason once it aborts.
 */
export async function scanPointers(runner: GitRunner, gitDir: string, request: ScanRequest): Promise<ScanResult> {
  if (request.tips.length === 0) return { pointers: [], invalid: [] };
  const candidates = await smallBlobs(runner, gitDir, request);
  const reader = new CatFile(runner, gitDir);
  const found = new Map<string, LfsPointer>();
  const invalid: ScanResult['invalid'] = [];
  try {
    for (let start = 0; start < candidates.length; start += READ_CHUNK) {
      request.signal.throwIfAborted();
      const objects = await Promise.all(candidates.slice(start, start + READ_CHUNK).map((blob) => reader.contents(blob)));
      for (const object of objects) {
        if (!object?.content) continue;
        const parsed = parsePointer(object.content);
        if ('pointer' in parsed) found.set(parsed.pointer.oid, parsed.pointer);
        else if ('invalid' in parsed) invalid.push({ blob: object.oid, reason: parsed.invalid });
      }
    }
  } finally {
    reader.close();
  }
  return { pointers: [...found.values()], invalid };
}

/** The ids of the blobs of pointer size in the new history (rev-list piped into cat-file --batch-check). */
async function smallBlobs(runner: GitRunner, gitDir: string, request: ScanRequest): Promise<string[]> {
  const { signal, timeoutMs } = request;
  const dir = `--git-dir=${gitDir}`;
  const list = runner.start([dir, 'rev-list', '--objects', '--no-object-names', `--filter=blob:limit=${MAX_POINTER_BYTES + 1}`, '--ignore-missing', '--stdin'], { timeoutMs });
  const check = runner.start([dir, 'cat-file', '--batch-check=%(objecttype) %(objectname) %(objectsize)'], { timeoutMs });
  const stopBoth = () => {
    list.stop();
    check.stop();
  };
  signal.addEventListener('abort', stopBoth, { once: true });
  try {
    list.child.stdout.pipe(check.child.stdin);
    list.child.stdin.end([...request.tips, ...request.scanned.map((tip) => `^${tip}`)].join('\n') + '\n');
    const blobs: string[] = [];
    const lines = createInterface({ input: check.child.stdout, crlfDelay: Infinity });
    const read = (async () => {
      for await (const line of lines) {
        const [type, id, size] = line.split(' ');
        const bytes = Number(size);
        if (type === 'blob' && id && bytes >= MIN_POINTER_BYTES && bytes <= MAX_POINTER_BYTES) blobs.push(id);
      }
    })();
    await Promise.all([exited(list, 'rev-list'), exited(check, 'cat-file --batch-check'), read]);
    signal.throwIfAborted();
    return blobs;
  } finally {
    signal.removeEventListener('abort', stopBoth);
    stopBoth();
  }
}

/** Resolves when `git` exits with status 0; rejects with its stderr otherwise. */
function exited(git: GitProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    git.child.once('error', (error) => reject(new GitError(`git ${what} failed: ${error.message}`, { cause: error })));
    git.child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new GitError(`git ${what} exited (${code ?? signal ?? 'killed'}): ${git.stderr().trim().slice(0, 500)}`));
    });
  });
}
