import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../../store/database.js';
import type { ImportState } from '../../store/import-tables.js';
import type { StoredType } from '../types.js';

/*
 * The statements of the GitHub-compatible read API (http/github-api): the
 * import a `/repos/{owner}/{repo}` path names, the stored objects it lists
 * (filtered, sorted, paginated as GitHub does), user profiles and
 * downloaded attachments. All read-only: the API never writes.
 */

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
 * named like the repo, else the oldest. Inputs: owner and repo from the
 * path, and which import names the caller may see (a scoped reader's).
 * Returns its id, name, state and API URL; undefined when there is none it
 * sees, or when it is still pending and has no repository yet (nothing to
 * serve). Few imports share an owner/repo, so they are all read and picked here.
 */
export async function findImport(database: ApiDatabase, owner: string, repo: string, sees: (name: string) => boolean): Promise<ImportRef | undefined> {
  const rows = await database.db
    .selectFrom('imports')
    .select(['id', 'name', 'state', 'api_url'])
    .where((eb) => eb(eb.fn('lower', ['owner']), '=', eb.fn('lower', [eb.val(owner)])))
    .where((eb) => eb(eb.fn('lower', ['repo']), '=', eb.fn('lower', [eb.val(repo)])))
    .orderBy('id')
    .execute()
    .then((all) => all.filter((row) => sees(row.name)));
  const wanted = repo.toLowerCase();
  const row = rows.find((r) => r.name.toLowerCase() === wanted) ?? rows[0];
  if (!row) return undefined;
  const found: ImportRef = { id: Number(row.id), name: row.name, state: row.state, apiUrl: row.api_url };
  if (found.state === 'pending' && !(await repositoryData(database, found.id))) return undefined;
  return found;
}

/**
 * Inputs: the import. Returns its stored `GET /repos/{owner}/{repo}` JSON
 * (text, served as stored), or undefined when not fetched yet.
 */
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
 * is never asked. Inputs: the login. Returns the profile JSON text and that
 * host (`api_url`, whose links the answer points at the copy);
 * undefined when that host has no profile of it.
 */
export async function userData(database: ApiDatabase, login: string): Promise<{ data: string; apiUrl: string } | undefined> {
  const key = login.toLowerCase();
  // From imports (few) into import_users by its key (import_id, login_key): no scan of every login.
  const row = await database.db
    .selectFrom('imports as i')
    .innerJoin('import_users as u', (join) => join.onRef('u.import_id', '=', 'i.id').on('u.login_key', '=', key))
    .leftJoin('github_users as g', (join) => join.onRef('g.api_host', '=', 'i.api_url').on('g.login_key', '=', key))
    .select(['g.state', 'g.data', 'i.api_url'])
    .orderBy('i.id')
    .limit(1)
    .executeTakeFirst();
  return row?.state === 'found' && row.data ? { data: row.data, apiUrl: row.api_url } : undefined;
}

/** A downloaded attachment: its URL, key and the name it is served under. */
export interface AttachmentLink {
  url: string;
  urlKey: string;
  filename: string | null;
}

/**
 * Inputs: the import. Returns every attachment of it that was downloaded
 * (`done`, with a sha256): the links the API rewrites to point at this
 * server's copies.
 */
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

/**
 * Inputs: an import name (case-insensitive, as names are unique) and a URL
 * key. Returns the file (sha256, type, name) of that downloaded attachment,
 * or undefined when it is not downloaded: the attachment route serves it.
 */
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

export type Direction = 'asc' | 'desc';

/** What a list sorts by: a copied-out column, or GitHub's id (the key, as a number). */
export type SortKey = 'created_at' | 'updated_at' | 'comments' | 'id';

/** Which stored objects a list holds, and in what order. */
export interface ObjectFilter {
  types: readonly StoredType[];
  /** Only objects of this issue / PR / milestone number. */
  number?: number;
  /** `open` or `closed` (the `state` column); `all` or unset: either. */
  state?: 'open' | 'closed' | 'all';
  /** Lower-cased label names that must all be present. */
  labels?: readonly string[];
  /** `updated_at >= since`, an ISO 8601 time in GitHub's form (`…T12:00:00Z`). */
  since?: string;
}

/** A page of a list: 1-based `page`, `perPage` items (the shape of pagination.ts's `Page`). */
export interface ListPage {
  page: number;
  perPage: number;
}

export interface ListRequest extends ObjectFilter {
  sort: SortKey;
  direction: Direction;
  page: ListPage;
}

/** A page of stored JSON (text, as stored) and how many objects the whole list has. */
export interface ListResult {
  data: string[];
  /** The `number` column of each (the issue an event or comment belongs to). */
  numbers: (number | null)[];
  total: number;
}

/** The key as a number: GitHub's ids grow with time, so this is id order. */
function keyAsNumber(database: ApiDatabase): RawBuilder<number> {
  return sql<number>`cast(${sql.ref('key')} as ${sql.raw(database.dialect === 'postgres' ? 'bigint' : 'integer')})`;
}

/** `labels` contains `needle` (an exact substring; no LIKE patterns to escape). */
function labelsContain(database: ApiDatabase, needle: string): RawBuilder<boolean> {
  return database.dialect === 'postgres'
    ? sql<boolean>`strpos(${sql.ref('labels')}, ${needle}) > 0`
    : sql<boolean>`instr(${sql.ref('labels')}, ${needle}) > 0`;
}

/**
 * The query the lists share, not yet selecting: the import's objects of
 * `filter.types`, narrowed by number, state, `since` and labels (each label
 * matched between newlines, as they are stored). Inputs: import and filter.
 */
function filtered(database: ApiDatabase, importId: number, filter: ObjectFilter) {
  let query = database.db
    .selectFrom('import_objects')
    .where('import_id', '=', importId)
    .where('type', 'in', [...filter.types]);
  if (filter.number !== undefined) query = query.where('number', '=', filter.number);
  if (filter.state && filter.state !== 'all') query = query.where('state', '=', filter.state);
  if (filter.since !== undefined) query = query.where('updated_at', '>=', filter.since);
  for (const label of filter.labels ?? []) query = query.where(labelsContain(database, `\n${label}\n`));
  return query;
}

/** Inputs: import and filter. Returns how many stored objects match: a list's total, for its `Link` header's last page. */
export async function countObjects(database: ApiDatabase, importId: number, filter: ObjectFilter): Promise<number> {
  const row = await filtered(database, importId, filter)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Inputs: import and request (filter, sort, direction, page). Returns one
 * page of the list (JSON text and numbers), sorted by `sort` then by id
 * (both in `direction`), and the list's total; a page past the end is read
 * no further than the count.
 */
export async function listObjects(database: ApiDatabase, importId: number, request: ListRequest): Promise<ListResult> {
  const total = await countObjects(database, importId, request);
  const offset = (request.page.page - 1) * request.page.perPage;
  if (offset >= total) return { data: [], numbers: [], total };
  let query = filtered(database, importId, request).select(['data', 'number']);
  if (request.sort !== 'id') query = query.orderBy(request.sort, request.direction);
  const rows = await query
    .orderBy(keyAsNumber(database), request.direction)
    .limit(request.page.perPage)
    .offset(offset)
    .execute();
  return { data: rows.map((row) => row.data), numbers: rows.map((row) => (row.number === null ? null : Number(row.number))), total };
}

/** Inputs: import and numbers. Returns the stored issue shapes (issues and pull requests) with these numbers, by number: the issue re-embedded in each event. */
export async function issuesByNumber(database: ApiDatabase, importId: number, numbers: readonly number[]): Promise<Map<number, string>> {
  if (numbers.length === 0) return new Map();
  const rows = await filtered(database, importId, { types: ['issue', 'pull_request_issue'] })
    .select(['number', 'data'])
    .where('number', 'in', [...new Set(numbers)])
    .execute();
  return new Map(rows.map((row) => [Number(row.number), row.data]));
}

/** Inputs: import and filter. Returns every stored object matching it, in id order: for the short lists sorted on fields only the JSON has. */
export async function allObjects(database: ApiDatabase, importId: number, filter: ObjectFilter): Promise<string[]> {
  const rows = await filtered(database, importId, filter).select('data').orderBy(keyAsNumber(database)).execute();
  return rows.map((row) => row.data);
}

/** Inputs: import, types and a number. Returns the stored object of one of `types` with that number (JSON text), the first by type, if any. */
export async function objectByNumber(database: ApiDatabase, importId: number, types: readonly StoredType[], number: number): Promise<string | undefined> {
  const row = await filtered(database, importId, { types, number }).select('data').orderBy('type').executeTakeFirst();
  return row?.data;
}

/** Inputs: import, type and key (the primary key: one indexed lookup). Returns that stored object's JSON text, if any. */
export async function objectByKey(database: ApiDatabase, importId: number, type: StoredType, key: string): Promise<string | undefined> {
  const row = await database.db
    .selectFrom('import_objects')
    .select('data')
    .where('import_id', '=', importId)
    .where('type', '=', type)
    .where('key', '=', key)
    .executeTakeFirst();
  return row?.data;
}
