import { constants } from 'node:fs';
import { access, copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import { urlKey } from '../attachments/url-key.js';
import type { RecordFiles } from './archive.js';
import { downloadedAttachments, type DbId, type StoredAttachment } from '../store/export-rows.js';

/** How archive records name a file inside the archive: `tarball://root/<path>`, as GitHub's exporter writes them. */
export const ARCHIVE_ROOT = 'tarball://root/';

/** URLs in Markdown or HTML: up to whitespace, quotes, brackets or angle brackets. */
const URL_PATTERN = /https?:\/\/[^\s<>"'`()[\]{}]+/g;
/** What often ends a URL in prose without being part of it. */
const TRAILING_PUNCTUATION = /[.,;:!?*_~]+$/;

/** The record an attachment was found in (`issue`, `issue_comment`, …) and who wrote it. */
export interface AttachmentOwner {
  type: string;
  url: string;
  user: string | null;
  createdAt: unknown;
}

/**
 * Puts attachments into the archive and points records at them.
 *
 * Each record type is read in batches; `prepare` looks up, in one query per
 * batch, which URLs in the batch's texts were downloaded (a `done`
 * `import_attachments` row: URL → file by SHA-256). `rewrite` then replaces
 * each such URL in a text by the file's archive path
 * (`tarball://root/attachments/<sha256>/<name>`), copying the file into the
 * archive the first time its content is met (so each file is there once,
 * however many URLs and records share it), and records the attachment
 * (`attachments_NNNNNN.json`: its original `url`, the record it was found
 * in, and `asset_url`, the archive path) the first time its URL is met.
 *
 * What stays in memory across batches is per attachment, not per record:
 * the archive path of each content copied and the key of each URL recorded.
 */
export class AttachmentLinker {
  readonly #db: Kysely<Schema>;
  readonly #importId: DbId;
  readonly #filesDir: string;
  readonly #archiveDir: string;
  readonly #records: RecordFiles;
  readonly #rewriteLinks: boolean;
  /** sha256 → archive path, for contents already copied (undefined: the stored file is missing). */
  readonly #paths = new Map<string, string | undefined>();
  /** URL keys whose attachment record is written. */
  readonly #recorded = new Set<string>();
  /** URL keys of URLs not downloaded that were already counted as missing. */
  readonly #missing = new Set<string>();
  #batch = new Map<string, StoredAttachment>();

  constructor(options: { db: Kysely<Schema>; importId: DbId; filesDir: string; archiveDir: string; records: RecordFiles; rewriteLinks: boolean }) {
    this.#db = options.db;
    this.#importId = options.importId;
    this.#filesDir = options.filesDir;
    this.#archiveDir = options.archiveDir;
    this.#records = options.records;
    this.#rewriteLinks = options.rewriteLinks;
  }

  /** Distinct attachment files copied into the archive. */
  get files(): number {
    let copied = 0;
    for (const path of this.#paths.values()) if (path !== undefined) copied++;
    return copied;
  }

  /** Downloaded attachments whose stored file was missing (their links were left as they were), counted once per URL. */
  get missing(): number {
    return this.#missing.size;
  }

  /** Looks up the attachments among the URLs of a batch's texts (and of `extraUrls`: release assets). */
  async prepare(texts: Iterable<unknown>, extraUrls: Iterable<unknown> = []): Promise<void> {
    const keys = new Set<string>();
    for (const text of texts) {
      if (typeof text !== 'string') continue;
      for (const url of candidateUrls(text)) keys.add(urlKey(url));
    }
    for (const url of extraUrls) if (typeof url === 'string' && url) keys.add(urlKey(url));
    this.#batch = keys.size === 0 ? new Map() : await downloadedAttachments(this.#db, this.#importId, [...keys]);
  }

  /**
   * `text` with each downloaded attachment's URL replaced by its archive
   * path (unchanged when links are not rewritten), recording each
   * attachment found as belonging to `owner`.
   */
  async rewrite(text: unknown, owner: AttachmentOwner): Promise<unknown> {
    if (typeof text !== 'string' || this.#batch.size === 0) return text;
    const replacements = new Map<string, string>();
    for (const url of candidateUrls(text)) {
      if (replacements.has(url)) continue;
      const key = urlKey(url);
      const stored = this.#batch.get(key);
      if (!stored) continue;
      const path = await this.#place(stored, key);
      if (path === undefined) continue;
      replacements.set(url, `${ARCHIVE_ROOT}${path}`);
      if (!this.#recorded.has(key)) {
        this.#recorded.add(key);
        await this.#records.write(attachmentRecord(stored, owner, path));
      }
    }
    if (!this.#rewriteLinks || replacements.size === 0) return text;
    // Replaced where each URL was found, whole: never inside a longer URL it is a prefix of.
    let result = '';
    let last = 0;
    for (const match of text.matchAll(URL_PATTERN)) {
      const url = match[0];
      const trimmed = url.replace(TRAILING_PUNCTUATION, '');
      const found = replacements.has(url) ? url : replacements.has(trimmed) ? trimmed : undefined;
      if (found === undefined) continue;
      result += text.slice(last, match.index) + replacements.get(found)!;
      last = match.index + found.length;
    }
    return result + text.slice(last);
  }

  /** The archive path (`tarball://root/…`) of a release asset downloaded from one of `urls`, or undefined. */
  async assetPath(urls: unknown[]): Promise<{ assetUrl: string; stored: StoredAttachment } | undefined> {
    for (const url of urls) {
      if (typeof url !== 'string' || !url) continue;
      const key = urlKey(url);
      const stored = this.#batch.get(key);
      if (!stored) continue;
      const path = await this.#place(stored, key);
      if (path !== undefined) return { assetUrl: `${ARCHIVE_ROOT}${path}`, stored };
    }
    return undefined;
  }

  /** Copies a content into the archive once; its path inside the archive, or undefined when the stored file is missing. */
  async #place(stored: StoredAttachment, key: string): Promise<string | undefined> {
    if (this.#paths.has(stored.sha256)) {
      const path = this.#paths.get(stored.sha256);
      if (path === undefined) this.#missing.add(key);
      return path;
    }
    // Only hex names are joined into paths: a corrupt row cannot point outside either directory.
    const source = /^[0-9a-f]{64}$/.test(stored.sha256) ? join(this.#filesDir, stored.sha256) : undefined;
    if (!source || !(await exists(source))) {
      this.#paths.set(stored.sha256, undefined);
      this.#missing.add(key);
      return undefined;
    }
    const path = `attachments/${stored.sha256}/${safeFileName(stored)}`;
    await mkdir(join(this.#archiveDir, 'attachments', stored.sha256), { recursive: true });
    // A copy-on-write clone where the file system has them, a plain copy elsewhere.
    await copyFile(source, join(this.#archiveDir, path), constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
    this.#paths.set(stored.sha256, path);
    return path;
  }
}

/** The URLs in a text, each also without trailing punctuation (`see https://x/y.png.` names `https://x/y.png`). */
export function candidateUrls(text: string): string[] {
  const urls: string[] = [];
  for (const match of text.matchAll(URL_PATTERN)) {
    const url = match[0];
    urls.push(url);
    const trimmed = url.replace(TRAILING_PUNCTUATION, '');
    if (trimmed !== url && trimmed.length > 'https://'.length) urls.push(trimmed);
  }
  return urls;
}

/** An `attachments_NNNNNN.json` record, in the fields (and order) GitHub's exporter writes. */
function attachmentRecord(stored: StoredAttachment, owner: AttachmentOwner, path: string): Record<string, unknown> {
  return {
    type: 'attachment',
    url: stored.url,
    [owner.type]: owner.url,
    user: owner.user,
    asset_name: safeFileName(stored),
    asset_content_type: stored.contentType ?? 'application/octet-stream',
    asset_url: `${ARCHIVE_ROOT}${path}`,
    created_at: owner.createdAt ?? null,
  };
}

/**
 * The file's name in the archive: the name it was downloaded under (or the
 * URL's last segment), reduced to characters safe in every file system and
 * tar header, at most 100 of them.
 */
export function safeFileName(stored: Pick<StoredAttachment, 'filename' | 'url'>): string {
  let name = stored.filename ?? '';
  if (!name) {
    try {
      name = decodeURIComponent(new URL(stored.url).pathname.split('/').pop() ?? '');
    } catch {
      name = '';
    }
  }
  name = name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[.]+/, '').slice(-100);
  return name && name !== '_' ? name : 'file';
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
