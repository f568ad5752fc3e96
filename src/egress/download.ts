import { createHash, randomUUID, type Hash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { BodySink } from './body.js';
import { requestFollowingRedirects } from './http.js';
import type { EgressPolicy } from './policy.js';

export interface ContentDownloadOptions {
  policy: EgressPolicy;
  signal: AbortSignal;
  timeoutMs: number;
  /** The largest file kept; a longer one fails with EgressResponseTooLargeError (nothing is kept). */
  maxBytes: number;
  /** Whether a redirect to `next` is followed (each hop is asked). */
  follow: (next: URL) => boolean;
  /** The headers of the request to each hop (a token only where it is bound). */
  headers: (hop: URL) => Record<string, string>;
  /** Where the file goes, named by its SHA-256 (created if missing). */
  filesDir: string;
  /**
   * Where it is written until it is whole (created if missing; on the same
   * filesystem as `filesDir`): default `filesDir`. A store of many
   * directories gives one directory here, which removeStaleDownloads can
   * sweep of what a killed process left.
   */
  temporaryDir?: string;
  /**
   * The content the caller expects (content-addressed stores: an LFS object):
   * bytes that hash or count otherwise are dropped before they get a name.
   */
  expected?: { sha256: string; size: number };
}

const TEMPORARY_PREFIX = '.download-';

/**
 * Removes the temporary files of downloads in `dir` not written to for
 * `olderThanMs` (a download writes its file as the bytes arrive): what a
 * killed process left, which nothing else would ever remove. Returns how
 * many went.
 */
export async function removeStaleDownloads(dir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith(TEMPORARY_PREFIX)) continue;
    const info = await stat(join(dir, name)).catch(() => undefined);
    if (!info?.isFile() || now - info.mtimeMs < olderThanMs) continue;
    await rm(join(dir, name), { force: true });
    removed++;
  }
  return removed;
}

/** A file stored, or the answer that ended the download without one (an error, a redirect not followed, bytes that were not the ones expected). */
export type ContentDownload =
  | { stored: true; sha256: string; size: number; headers: IncomingHttpHeaders }
  | { stored: false; status: number; location: string | undefined }
  | { stored: false; status: 200; mismatch: { sha256: string; size: number } };

/**
 * GETs `url` (redirects followed hop by hop through the egress policy) and
 * streams a 200's body to a temporary file in `filesDir`, hashing it on the
 * way, then renames it to `<filesDir>/<sha256>`: a file is never held whole
 * in memory, the size cap holds while the bytes arrive, a download that
 * fails midway leaves nothing behind, and a file under its final name is
 * always whole (the rename is atomic). Other answers' bodies are not kept.
 * @throws what requestFollowingRedirects throws (EgressResponseTooLargeError past `maxBytes`); a write error of the disk.
 */
export async function downloadByContent(url: URL, options: ContentDownloadOptions): Promise<ContentDownload> {
  await mkdir(options.filesDir, { recursive: true });
  const temporaryDir = options.temporaryDir ?? options.filesDir;
  if (temporaryDir !== options.filesDir) await mkdir(temporaryDir, { recursive: true });
  const temporary = join(temporaryDir, `${TEMPORARY_PREFIX}${randomUUID()}.tmp`);
  const hash = createHash('sha256');
  let closed: Promise<void> | undefined;
  const sink: BodySink = ({ status }) => {
    if (status !== 200) return discarding();
    const file = createWriteStream(temporary, { flags: 'wx' });
    closed = new Promise((resolve) => file.once('close', () => resolve()));
    return hashingInto(file, hash);
  };
  try {
    const response = await requestFollowingRedirects(url, {
      policy: options.policy,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      maxBytes: options.maxBytes,
      follow: options.follow,
      headers: options.headers,
      sink,
    });
    if (response.status !== 200) return { stored: false, status: response.status, location: response.headers.location };
    const sha256 = hash.digest('hex');
    const { expected } = options;
    if (expected && (expected.sha256 !== sha256 || expected.size !== response.size)) return { stored: false, status: 200, mismatch: { sha256, size: response.size } };
    await rename(temporary, join(options.filesDir, sha256));
    return { stored: true, sha256, size: response.size, headers: response.headers };
  } finally {
    // The file is closed before it is removed: an open still under way would otherwise leave it behind.
    await closed;
    await rm(temporary, { force: true });
  }
}

/** Writes to `file` what it is given, hashing it on the way; finishes once the file is closed. */
function hashingInto(file: WriteStream, hash: Hash): Writable {
  const writer = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      if (file.write(chunk)) callback();
      else file.once('drain', () => callback());
    },
    final(callback) {
      file.once('close', () => callback());
      file.end();
    },
    destroy(error, callback) {
      if (!file.destroyed) file.destroy();
      callback(error);
    },
  });
  file.once('error', (error) => writer.destroy(error));
  return writer;
}

/** A body nobody keeps (an error's, a redirect's): read and dropped, still counted against the cap. */
function discarding(): Writable {
  return new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });
}
