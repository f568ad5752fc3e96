import type { Database } from '../../../store/database.js';
import type { ImportState } from '../../../store/import-tables.js';

/** What the API reads from: the registry database. */
export type ApiDatabase = Pick<Database, 'db' | 'dialect'>;

/** The import a `/repos/{owner}/{repo}` path names. */
export interface ImportRef {
  id: number;
  name: string;
  state: ImportState;
  apiUrl: string;
}

/**
 * The import `/repos/{owner}/{repo}` reads: the one with that owner and repo
 * (case-insensitive); when imports from several API hosts have them, the one
 * named like the repo, else the oldest. Undefined when there is none, or
 * when it is still pending and has no repository yet.
 */
export async function findImport(database: ApiDatabase, owner: string, repo: string): Promise<ImportRef | undefined> {
  const rows = await database.db
    .selectFrom('imports')
    .select(['id', 'name', 'state', 'api_url'])
    .where((eb) => eb(eb.fn('lower', ['owner']), '=', eb.fn('lower', [eb.val(owner)])))
    .where((eb) => eb(eb.fn('lower', ['repo']), '=', eb.fn('lower', [eb.val(repo)])))
    .orderBy('id')
    .execute();
  const wanted = repo.toLowerCase();
  const row = rows.find((r) => r.name.toLowerCase() === wanted) ?? rows[0];
  if (!row) return undefined;
  const found: ImportRef = { id: Number(row.id), name: row.name, state: row.state, apiUrl: row.api_url };
  if (found.state === 'pending' && !(await repositoryData(database, found.id))) return undefined;
  return found;
}

/** The stored `GET /repos/{owner}/{repo}` JSON (text) of an import, if fetched yet. */
export async function repositoryData(database: ApiDatabase, importId: number): Promise<string | undefined> {
  const row = await database.db
    .selectFrom('import_objects')
    .select('data')
    .where('import_id', '=', importId)
    .where('type', '=', 'repository')
    .where('key', '=', 'repository')
    .executeTakeFirst();
  return row?.data;
}

/**
 * A user's stored profile (JSON text), from one API host only: that of the
 * oldest import in which the login appears (`import_users`), and only its
 * `found` row of `github_users`. Profiles are per API host, so an import from
 * another host — added later, perhaps a hostile one — can never replace what
 * the first import's readers see, and a host where the login does not appear
 * is never asked; undefined when that host has no profile of it.
 */
export async function userData(database: ApiDatabase, login: string): Promise<string | undefined> {
  const key = login.toLowerCase();
  // From imports (few) into import_users by its key (import_id, login_key): no scan of every login.
  const row = await database.db
    .selectFrom('imports as i')
    .innerJoin('import_users as u', (join) => join.onRef('u.import_id', '=', 'i.id').on('u.login_key', '=', key))
    .leftJoin('github_users as g', (join) => join.onRef('g.api_host', '=', 'i.api_url').on('g.login_key', '=', key))
    .select(['g.state', 'g.data'])
    .orderBy('i.id')
    .limit(1)
    .executeTakeFirst();
  return row?.state === 'found' ? (row.data ?? undefined) : undefined;
}

/** A downloaded attachment: its URL, key and the name it is served under. */
export interface AttachmentLink {
  url: string;
  urlKey: string;
  filename: string | null;
}

/** Every attachment of an import that was downloaded (`done`). */
export async function doneAttachments(database: ApiDatabase, importId: number): Promise<AttachmentLink[]> {
  const rows = await database.db
    .selectFrom('import_attachments')
    .select(['url', 'url_key', 'filename'])
    .where('import_id', '=', importId)
    .where('state', '=', 'done')
    .where('sha256', 'is not', null)
    .execute();
  return rows.map((row) => ({ url: row.url, urlKey: row.url_key, filename: row.filename }));
}

/** A stored attachment file, as the attachment route serves it. */
export interface AttachmentFile {
  sha256: string;
  contentType: string | null;
  filename: string | null;
}

/** The downloaded attachment `urlKey` of the import named `name` (case-insensitive), if any. */
export async function attachmentFile(database: ApiDatabase, name: string, urlKey: string): Promise<AttachmentFile | undefined> {
  const row = await database.db
    .selectFrom('import_attachments as a')
    .innerJoin('imports as i', 'i.id', 'a.import_id')
    .select(['a.sha256', 'a.content_type', 'a.filename'])
    .where((eb) => eb(eb.fn('lower', ['i.name']), '=', eb.fn('lower', [eb.val(name)])))
    .where('a.url_key', '=', urlKey)
    .where('a.state', '=', 'done')
    .executeTakeFirst();
  if (!row?.sha256) return undefined;
  return { sha256: row.sha256, contentType: row.content_type, filename: row.filename };
}
