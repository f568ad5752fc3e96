import { sql, type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/** A cached profile: found (with GitHub's JSON and ETag) or known missing (404). */
export interface CachedUser {
  login: string;
  state: 'found' | 'missing';
  data: unknown;
  etag: string | null;
  expiresAt: number;
}

/** How long a profile is trusted: 24 h, extended on every read of a found one. */
export const USER_TTL_MS = 24 * 3_600_000;

/**
 * The statement that records the logins that appear in an import (once
 * each). Inputs: logins. Stores import_users rows, existing ones untouched.
 */
export function addLoginsStep(db: Kysely<Schema>, importId: number, run: number, logins: Iterable<string>): Compilable | null {
  const unique = new Map<string, string>();
  for (const login of logins) if (login) unique.set(login.toLowerCase(), login);
  if (unique.size === 0) return null;
  return db
    .insertInto('import_users')
    .values([...unique].map(([key, login]) => ({ import_id: importId, login_key: key, login, run })))
    .onConflict((oc) => oc.columns(['import_id', 'login_key']).doNothing());
}

/** Logins of an import whose profile is missing from the cache or expired (those a sync must fetch). */
export async function loginsToFetch(db: Kysely<Schema>, importId: number, apiUrl: string, now: number): Promise<string[]> {
  const rows = await db
    .selectFrom('import_users as u')
    .leftJoin('github_users as g', (join) => join.onRef('g.login_key', '=', 'u.login_key').on('g.api_host', '=', apiUrl))
    .select('u.login')
    .where('u.import_id', '=', importId)
    .where((eb) => eb.or([eb('g.login_key', 'is', null), eb('g.expires_at', '<=', now)]))
    .orderBy('u.login_key')
    .execute();
  return rows.map((row) => row.login);
}

/**
 * The statement that trusts again the fresh profiles of an import's users.
 * Inputs: the import, its API host, now. Stores expires_at = now + 24 h on
 * the found, unexpired github_users rows of the logins in import_users: a
 * fresh cached profile is not fetched again, and its 24 h start again as on
 * any read (see readUser), so the finish stage fetches only the rest.
 */
export function extendFreshProfilesStep(db: Kysely<Schema>, importId: number, apiUrl: string, now: number): Compilable {
  return db
    .updateTable('github_users')
    .set({ expires_at: now + USER_TTL_MS })
    .where('api_host', '=', apiUrl)
    .where('state', '=', 'found')
    .where('expires_at', '>', now)
    .where('login_key', 'in', db.selectFrom('import_users').select('login_key').where('import_id', '=', importId));
}

/** The cached profile of `login` on `apiUrl`, found ones refreshed (their expiry moves to now + 24 h). */
export async function readUser(db: Kysely<Schema>, apiUrl: string, login: string, now: number): Promise<CachedUser | undefined> {
  const row = await db.selectFrom('github_users').selectAll().where('api_host', '=', apiUrl).where('login_key', '=', login.toLowerCase()).executeTakeFirst();
  if (!row) return undefined;
  let expiresAt = Number(row.expires_at);
  if (row.state === 'found' && expiresAt > now) {
    expiresAt = now + USER_TTL_MS;
    await db.updateTable('github_users').set({ expires_at: expiresAt }).where('api_host', '=', apiUrl).where('login_key', '=', row.login_key).execute();
  }
  return { login, state: row.state, data: row.data ? JSON.parse(row.data) : null, etag: row.etag, expiresAt };
}

/**
 * The statement that stores a fetched profile (or a 404) for 24 h. A
 * missing one is never extended by reads, so a deleted account is asked
 * again a day later. Inputs: the answer. Stores the github_users row.
 */
export function writeUserStep(db: Kysely<Schema>, apiUrl: string, user: Omit<CachedUser, 'expiresAt'>, now: number): Compilable {
  const values = {
    api_host: apiUrl,
    login_key: user.login.toLowerCase(),
    state: user.state,
    data: user.data === null || user.data === undefined ? null : JSON.stringify(user.data),
    etag: user.etag,
    fetched_at: now,
    expires_at: now + USER_TTL_MS,
  };
  return db
    .insertInto('github_users')
    .values(values)
    .onConflict((oc) =>
      oc.columns(['api_host', 'login_key']).doUpdateSet({ state: sql`excluded.state`, data: sql`excluded.data`, etag: sql`excluded.etag`, fetched_at: now, expires_at: now + USER_TTL_MS }),
    );
}

/** Users of an import: every login that appears, and how many of them have a profile. */
export async function countUsers(db: Kysely<Schema>, importId: number, apiUrl: string): Promise<{ appearing: number; found: number }> {
  const row = await db
    .selectFrom('import_users as u')
    .leftJoin('github_users as g', (join) => join.onRef('g.login_key', '=', 'u.login_key').on('g.api_host', '=', apiUrl))
    .select([sql<number>`count(*)`.as('appearing'), sql<number>`sum(case when g.state = 'found' then 1 else 0 end)`.as('found')])
    .where('u.import_id', '=', importId)
    .executeTakeFirst();
  return { appearing: Number(row?.appearing ?? 0), found: Number(row?.found ?? 0) };
}
