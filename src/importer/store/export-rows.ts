import type { Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';

/** An id as the drivers return it: a number, or a 64-bit integer as text (PostgreSQL's bigint). */
export type DbId = number | string;

/** One stored object, its JSON parsed. */
export interface StoredObject {
  key: string;
  number: number | null;
  data: Record<string, unknown>;
}

/** The import an export reads. */
export interface ImportRecord {
  id: DbId;
  name: string;
  owner: string;
  repo: string;
  apiUrl: string;
}

/**
 * The reads an export makes: the import, its stored objects (keyset-paged,
 * so any size is read in constant memory), the profiles of its users and
 * its downloaded attachments. All read-only; nothing here writes.
 */

/**
 * The import named `name`. Inputs: the name. Returns its id, owner, repo and
 * API URL, or undefined. Compared case-insensitively because import names are
 * unique regardless of case.
 */
export async function findImport(db: Kysely<Schema>, name: string): Promise<ImportRecord | undefined> {
  const row = await db
    .selectFrom('imports')
    .select(['id', 'name', 'owner', 'repo', 'api_url'])
    .where((eb) => eb(eb.fn('lower', ['name']), '=', name.toLowerCase()))
    .executeTakeFirst();
  return row && { id: row.id, name: row.name, owner: row.owner, repo: row.repo, apiUrl: row.api_url };
}

/** The stored objects of one type of an import (key, number, JSON): what the reads below narrow down. */
function objectsOf(db: Kysely<Schema>, importId: DbId, type: StoredType) {
  return db.selectFrom('import_objects').select(['key', 'number', 'data']).where('import_id', '=', importId as number).where('type', '=', type);
}

/**
 * One stored object. Inputs: import, type and key (the primary key, so one
 * indexed lookup). Returns its key, number and parsed JSON, or undefined.
 */
export async function findObject(db: Kysely<Schema>, importId: DbId, type: StoredType, key: string): Promise<StoredObject | undefined> {
  const row = await objectsOf(db, importId, type)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && toObject(row);
}

/**
 * Inputs: import, type, batch size. Returns (yields) the stored objects.
 * Every object of one type, in batches of at most `size`, keyset-paginated
 * on the primary key `(import_id, type, key)`: each batch is one indexed
 * range read after the last key seen, so a project of any size is read in
 * constant memory and no row is skipped or repeated by an OFFSET.
 */
export async function* objectBatches(db: Kysely<Schema>, importId: DbId, type: StoredType, size: number): AsyncGenerator<StoredObject[]> {
  let after: string | undefined;
  for (;;) {
    let query = objectsOf(db, importId, type);
    if (after !== undefined) query = query.where('key', '>', after);
    const rows = await query.orderBy('key').limit(size).execute();
    if (rows.length === 0) return;
    yield rows.map(toObject);
    if (rows.length < size) return;
    after = rows[rows.length - 1]!.key;
  }
}

/**
 * Inputs: import, type and a batch's issue / pull request numbers. Returns
 * the objects of that type with one of those numbers, in key order; the
 * export reads a batch's comments, events and reviews together this way.
 */
export async function objectsWithNumbers(db: Kysely<Schema>, importId: DbId, type: StoredType, numbers: number[]): Promise<StoredObject[]> {
  if (numbers.length === 0) return [];
  const rows = await objectsOf(db, importId, type)
    .where('number', 'in', numbers)
    .orderBy('key')
    .execute();
  return rows.map(toObject);
}

/**
 * Inputs: import and numbers. Returns which of `numbers` are pull requests
 * of the import: issue comments and events name either, and the export files
 * them differently.
 */
export async function pullRequestNumbers(db: Kysely<Schema>, importId: DbId, numbers: number[]): Promise<Set<number>> {
  if (numbers.length === 0) return new Set();
  const rows = await db
    .selectFrom('import_objects')
    .select('number')
    .where('import_id', '=', importId as number)
    .where('type', '=', 'pull_request')
    .where('number', 'in', numbers)
    .execute();
  return new Set(rows.map((row) => Number(row.number)));
}

/**
 * The GitHub profiles (`github_users`, found) of the logins that appear in
 * the import, in batches by login key. Profiles are per API host; the
 * import's host is its `api_url`. Inputs: import, its API host, batch
 * size. Returns (yields) the parsed profiles, keyset-paged on the login key
 * like `objectBatches`.
 */
export async function* userBatches(db: Kysely<Schema>, importId: DbId, apiHost: string, size: number): AsyncGenerator<Record<string, unknown>[]> {
  let after: string | undefined;
  for (;;) {
    let query = db
      .selectFrom('import_users as iu')
      .innerJoin('github_users as gu', (join) => join.onRef('gu.login_key', '=', 'iu.login_key').on('gu.api_host', '=', apiHost))
      .select(['iu.login_key', 'gu.data'])
      .where('iu.import_id', '=', importId as number)
      .where('gu.state', '=', 'found');
    if (after !== undefined) query = query.where('iu.login_key', '>', after);
    const rows = await query.orderBy('iu.login_key').limit(size).execute();
    if (rows.length === 0) return;
    const profiles: Record<string, unknown>[] = [];
    for (const row of rows) {
      const data = row.data === null ? undefined : parseObject(row.data);
      if (data) profiles.push(data);
    }
    yield profiles;
    if (rows.length < size) return;
    after = rows[rows.length - 1]!.login_key;
  }
}

/** A downloaded attachment: the file its URL's bytes are stored in. */
export interface StoredAttachment {
  url: string;
  sha256: string;
  contentType: string | null;
  filename: string | null;
}

/**
 * Inputs: import and URL keys. Returns the downloaded (`done`, with a
 * sha256) attachments among them, by URL key: the export copies these files
 * and leaves every other link as it is.
 */
export async function downloadedAttachments(db: Kysely<Schema>, importId: DbId, urlKeys: string[]): Promise<Map<string, StoredAttachment>> {
  const found = new Map<string, StoredAttachment>();
  // Bounded IN lists: well within SQLite's and PostgreSQL's parameter limits.
  for (let start = 0; start < urlKeys.length; start += 500) {
    const rows = await db
      .selectFrom('import_attachments')
      .select(['url_key', 'url', 'sha256', 'content_type', 'filename'])
      .where('import_id', '=', importId as number)
      .where('state', '=', 'done')
      .where('url_key', 'in', urlKeys.slice(start, start + 500))
      .execute();
    for (const row of rows) {
      if (row.sha256 === null) continue;
      found.set(row.url_key, { url: row.url, sha256: row.sha256, contentType: row.content_type, filename: row.filename });
    }
  }
  return found;
}

function toObject(row: { key: string; number: number | string | null; data: string }): StoredObject {
  return { key: row.key, number: row.number === null ? null : Number(row.number), data: parseObject(row.data) ?? {} };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  const value: unknown = JSON.parse(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
