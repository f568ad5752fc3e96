import type { TreeEntry } from '../../../../git/cat-file.js';
import { base64Lines, encodePath, type RepoLinks } from './payloads.js';

/*
 * GitHub's `/contents/{path}` and `/readme` JSON: a file (`content-file`,
 * its bytes base64 in lines of 60), a symlink, a submodule, or a
 * directory's entries. Links name the ref asked for, as GitHub's do:
 * `url` is the API's `contents/<path>?ref=<ref>`, `html_url` the forge's
 * `blob/<ref>/<path>` (`tree/…` for a directory), `download_url` its
 * `raw/<ref>/<path>`.
 */

/** What a content entry is, as GitHub names it (a directory listing calls symlinks files, as GitHub does). */
export type ContentType = 'file' | 'dir' | 'symlink' | 'submodule';

/** An object at a path, as the routes found it. */
export interface ContentObject {
  path: string;
  sha: string;
  type: ContentType;
  size: number;
}

function contentLinks(repo: RepoLinks, ref: string, object: ContentObject) {
  const path = encodePath(object.path);
  const url = `${repo.api}/contents/${path}?ref=${encodeURIComponent(ref)}`;
  const gitUrl = object.type === 'submodule' ? null : `${repo.api}/git/${object.type === 'dir' ? 'trees' : 'blobs'}/${object.sha}`;
  const htmlUrl = object.type === 'submodule' ? null : `${repo.web}/${object.type === 'dir' ? 'tree' : 'blob'}/${encodePath(ref)}/${path}`;
  const downloadUrl = object.type === 'file' || object.type === 'symlink' ? `${repo.web}/raw/${encodePath(ref)}/${path}` : null;
  return { url, git_url: gitUrl, html_url: htmlUrl, download_url: downloadUrl, _links: { self: url, git: gitUrl, html: htmlUrl } };
}

/** One entry of a directory listing (no content). */
export function directoryItem(repo: RepoLinks, ref: string, object: ContentObject): Record<string, unknown> {
  const name = object.path.slice(object.path.lastIndexOf('/') + 1);
  // In a listing GitHub calls a symlink a file.
  const type = object.type === 'symlink' ? 'file' : object.type;
  return { name, path: object.path, sha: object.sha, size: object.type === 'dir' || object.type === 'submodule' ? 0 : object.size, ...contentLinks(repo, ref, object), type };
}

/** Files larger than this come without their content (`encoding: "none"`), as GitHub's: the raw media type or the blob has them. */
export const MAX_INLINE_CONTENT_BYTES = 1024 * 1024;

/** A file (or symlink) with its content: base64 for a file (empty past 1 MiB), the target for a symlink. */
export function fileBody(repo: RepoLinks, ref: string, object: ContentObject, content: Buffer): Record<string, unknown> {
  const name = object.path.slice(object.path.lastIndexOf('/') + 1);
  const base = { name, path: object.path, sha: object.sha, size: content.length, ...contentLinks(repo, ref, object) };
  if (object.type === 'symlink') return { type: 'symlink', target: content.toString('utf8'), ...base };
  if (content.length > MAX_INLINE_CONTENT_BYTES) return { type: 'file', encoding: 'none', ...base, content: '' };
  return { type: 'file', encoding: 'base64', ...base, content: base64Lines(content) };
}

/** A submodule at a path: what GitHub answers for one (its repository unknown here). */
export function submoduleBody(repo: RepoLinks, ref: string, object: ContentObject): Record<string, unknown> {
  const name = object.path.slice(object.path.lastIndexOf('/') + 1);
  return { type: 'submodule', submodule_git_url: null, name, path: object.path, sha: object.sha, size: 0, ...contentLinks(repo, ref, object) };
}

/** What a tree entry is as content. */
export function contentTypeOf(entry: TreeEntry): ContentType {
  if (entry.type === 'tree') return 'dir';
  if (entry.type === 'commit') return 'submodule';
  return entry.mode === '120000' ? 'symlink' : 'file';
}

/** The README among a directory's entries, as GitHub picks it: a file named `readme` with any extension, any case. */
export function readmeOf(entries: TreeEntry[]): TreeEntry | undefined {
  return entries.find((entry) => entry.type === 'blob' && /^readme(\.[^/]*)?$/i.test(entry.name));
}
