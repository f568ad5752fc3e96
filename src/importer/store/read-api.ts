import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../../store/database.js';
import type { ImportState } from '../../store/import-tables.js';
import type { StoredType } from '../types.js';
import { listConditions, type ListFilter } from './list-filters.js';
import { listMemo, writeStamp, type Anchor } from './list-memo.js';
import { pageKeys, rowsByIds, type PageSort } from './list-pages.js';

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
 * The import `/repositories/{repository_id}` reads: the one whose stored
 * repository has that GitHub id (kept in the repository row's `number`),
 * the oldest when several imports have it. Inputs: the id, and which import
 * names the caller may see. From `imports` (few rows) into `import_objects`
 * by its `(import_id, type, number)` index: one index probe per import, no
 * scan of any JSON. Returns as findImport does.
 */
export async function findImportByRepositoryId(database: ApiDatabase, repositoryId: number, sees: (name: string) => boolean): Promise<ImportRef | undefined> {
  const rows = await database.db
    .selectFrom('imports as i')
    .innerJoin('import_objects as o', (join) => join.onRef('o.import_id', '=', 'i.id').on('o.type', '=', 'repository').on('o.number', '=', repositoryId))
    .select(['i.id', 'i.name', 'i.state', 'i.api_url'])
    .orderBy('i.id')
    .execute();
  const row = rows.find((r) => sees(r.name));
  return row ? { id: Number(row.id), name: row.name, state: row.state, apiUrl: row.api_url } : undefined;
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

/** What a list sorts by: a copied-out column, GitHub's id (`sort_id`), or `name` (the lower-cased name labels keep in `state`). */
export type SortKey = PageSort;

/** Which stored objects a list holds (list-filters.ts). */
export type ObjectFilter = ListFilter;

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

/**
 * The lookups' query, not yet selecting: the import's objects of `types`
 * with `number`, through the `(import_id, type, number)` index. Inputs:
 * import, types and number.
 */
function filtered(database: ApiDatabase, importId: number, filter: { types: readonly StoredType[]; number?: number }) {
  let query = database.db
    .selectFrom('import_objects')
    .where('import_id', '=', importId)
    .where('type', 'in', [...filter.types]);
  if (filter.number !== undefined) query = query.where('number', '=', filter.number);
  return query;
}

/**
 * Inputs: import and filter. Returns how many stored objects match: a
 * list's total, for its `Link` header's last page. Counted on the list
 * index that leads with (import_id, listed_as[, state]): an index-only count
 * for the unfiltered lists, no table row read.
 */
export async function countObjects(database: ApiDatabase, importId: number, filter: ObjectFilter): Promise<number> {
  const row = await database.db
    .selectFrom('import_objects')
    .where(listConditions(database.dialect, importId, filter))
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Inputs: import and request (filter, sort, direction, page). Returns one
 * page of the list (JSON text and numbers), sorted by `sort` then by
 * GitHub's id (both in `direction`), and the list's total; a page past the
 * end is read no further than the count.
 *
 * No OFFSET over rows: the page's keys are walked on the list index that
 * serves the order (index entries only, list-pages.ts), from the nearest
 * page end already served (a keyset seek: following `next` links walks no
 * entry twice) or from the start, and then its rows are fetched by id. The
 * total and the page ends are remembered per list until the import writes
 * again (list-memo.ts), so no request counts the whole list but the first.
 */
export async function listObjects(database: ApiDatabase, importId: number, request: ListRequest): Promise<ListResult> {
  const { sort, direction, page, ...filter } = request;
  const memo = listMemo(database, importId, JSON.stringify(filter), await writeStamp(database, importId));
  memo.total ??= await countObjects(database, importId, filter);
  const total = memo.total;
  const offset = (page.page - 1) * page.perPage;
  if (offset >= total) return { data: [], numbers: [], total };
  const order = `${sort} ${direction}`;
  const from = memo.nearest(order, offset);
  const skip = offset - (from?.offset ?? 0);
  // A walk that skips reads the entry before the page too: it is the anchor of this page's start, so asking for it again seeks.
  const walked = await pageKeys(database, importId, filter, { sort, direction, perPage: page.perPage + (skip > 0 ? 1 : 0), skip: Math.max(0, skip - 1), ...(from ? { anchor: from.anchor } : {}) });
  const keys = skip > 0 ? walked.slice(1) : walked;
  const anchorable = (key: Anchor | undefined): key is Anchor => key !== undefined && (sort === 'id' || key.value !== undefined);
  if (skip > 0 && anchorable(walked[0])) memo.remember(order, offset, walked[0]);
  const last = keys.at(-1);
  if (anchorable(last)) memo.remember(order, offset + keys.length, last);
  const rows = await rowsByIds(database, importId, filter.types, keys.map((key) => key.id));
  const found = keys.flatMap((key) => rows.get(key.id) ?? []);
  return { data: found.map((row) => row.data), numbers: found.map((row) => row.number), total };
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
  const rows = await database.db.selectFrom('import_objects').where(listConditions(database.dialect, importId, filter)).select('data').orderBy('sort_id').execute();
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

/** A stored object's JSON text and the number it belongs to (the issue of an event, the pull request of a review). */
export interface NumberedObject {
  data: string;
  number: number | null;
}

/**
 * Inputs: import, type and key (the primary key: one indexed lookup).
 * Returns that stored object's JSON text with its `number` column, if any:
 * single objects answered only below their issue or pull request, or with
 * that issue re-embedded.
 */
export async function numberedObjectByKey(database: ApiDatabase, importId: number, type: StoredType, key: string): Promise<NumberedObject | undefined> {
  const row = await database.db
    .selectFrom('import_objects')
    .select(['data', 'number'])
    .where('import_id', '=', importId)
    .where('type', '=', type)
    .where('key', '=', key)
    .executeTakeFirst();
  return row ? { data: row.data, number: row.number === null ? null : Number(row.number) } : undefined;
}

/**
 * Inputs: import and a label name. Returns the stored label of that name,
 * compared case-insensitively as GitHub does (the `state` column holds the
 * lower-cased name), if any. Reads the import's labels by the primary key's
 * `(import_id, type)` prefix: a repository has few labels.
 */
export async function labelByName(database: ApiDatabase, importId: number, name: string): Promise<string | undefined> {
  const row = await filtered(database, importId, { types: ['label'] })
    .select('data')
    .where('state', '=', name.toLowerCase())
    .orderBy(keyAsNumber(database))
    .executeTakeFirst();
  return row?.data;
}

/**
 * Inputs: the import. Returns the highest issue or pull request number
 * imported (undefined when none): a number at or below it that has no
 * object was deleted upstream (numbers are handed out without gaps), so it
 * answers 410 as GitHub does (issues seen deleted leave a marker,
 * `issue_deleted`, so the highest number stays when it is the one deleted). One `max` per type on the
 * `(import_id, type, number)` index.
 */
export async function highestNumber(database: ApiDatabase, importId: number): Promise<number | undefined> {
  const types: StoredType[] = ['issue', 'pull_request_issue', 'pull_request', 'issue_deleted'];
  const maxima = await Promise.all(
    types.map((type) =>
      database.db
        .selectFrom('import_objects')
        .select((eb) => eb.fn.max('number').as('highest'))
        .where('import_id', '=', importId)
        .where('type', '=', type)
        .executeTakeFirst(),
    ),
  );
  const numbers = maxima.map((row) => (row?.highest === null || row?.highest === undefined ? Number.NaN : Number(row.highest))).filter((n) => Number.isFinite(n));
  return numbers.length > 0 ? Math.max(...numbers) : undefined;
}
