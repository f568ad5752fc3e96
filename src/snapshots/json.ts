import type { SnapshotEntry } from './cache.js';
import type { ObjectAt } from './service.js';
import type { SnapshotJson } from './snapshot.js';

/** A cached snapshot as `forgesync snapshot list --json` shows it (`GET /api/snapshots` leaves out `path`: snapshotEntryAnswerJson). */
export function snapshotEntryJson(entry: SnapshotEntry) {
  return {
    source: entry.source,
    sha: entry.sha,
    path: entry.path,
    files: entry.files,
    bytes: entry.bytes,
    createdAt: entry.createdAt,
    lastUsedAt: entry.lastUsedAt,
    holds: entry.holds.map((hold) => ({
      handle: hold.handle,
      owner: hold.owner,
      pid: hold.pid,
      host: hold.host,
      createdAt: hold.createdAt,
      expiresAt: hold.expiresAt,
      creator: hold.creator ?? null,
    })),
  };
}

/**
 * A snapshot as the HTTP API answers it: `forgesync snapshot --json`'s JSON
 * without `path`, a directory on the server that callers of the API cannot
 * use and should not learn (they hold and release by `handle`).
 */
export function snapshotAnswerJson(snapshot: SnapshotJson): Omit<SnapshotJson, 'path'> {
  const { path: _path, ...answer } = snapshot;
  return answer;
}

/** A cached snapshot as `GET /api/snapshots` shows it: as the CLI lists it, without its `path` on the server. */
export function snapshotEntryAnswerJson(entry: SnapshotEntry) {
  const { path: _path, ...answer } = snapshotEntryJson(entry);
  return answer;
}

/** A file (content as UTF-8 text when it is valid UTF-8, else base64) or a directory listing. */
export function objectAtJson(object: ObjectAt) {
  if (object.type === 'tree') return { type: 'tree' as const, sha: object.sha, path: object.path, entries: object.entries };
  const text = object.content.toString('utf8');
  const utf8 = Buffer.from(text, 'utf8').equals(object.content);
  return {
    type: 'blob' as const,
    sha: object.sha,
    path: object.path,
    size: object.size,
    encoding: utf8 ? ('utf8' as const) : ('base64' as const),
    content: utf8 ? text : object.content.toString('base64'),
  };
}

/** An object as objectAtJson wrote it, read back (a read another shard answered). */
export function objectAtFromJson(json: ReturnType<typeof objectAtJson>): ObjectAt {
  if (json.type === 'tree') return json;
  return { type: 'blob', sha: json.sha, path: json.path, size: json.size, content: Buffer.from(json.content, json.encoding) };
}
