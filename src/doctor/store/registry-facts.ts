import { existsSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { UnavailableError } from '../../errors.js';
import type { Schema } from '../../store/types.js';
import { databaseDialect, type StoreDialect } from '../../store/database.js';
import { sqliteFilePath } from '../../util/sqlite-url.js';

/** What the doctor reads of the registry: the server, its clock, and what the other checks look at. */
export interface RegistryFacts {
  dialect: StoreDialect;
  /** `SQLite 3.45.1`, `PostgreSQL 16.2 …`. */
  version: string;
  /** The SQLite file does not exist yet: `serve` creates it. */
  absent: boolean;
  /** The database's clock against ours; undefined for SQLite (it is this machine's clock). */
  clock: ClockReading | undefined;
  /** Tables not there yet (a database no forgesync has opened): the lists below are then empty. */
  unmigrated: boolean;
  feeds: { name: string; sink: string; secret: string | null }[];
  shards: { id: string; node: string; dataDir: string; state: string; lastSeenAt: number }[];
  /** Every credential a source or an import names, with the URL it is used for. */
  credentialUses: CredentialUse[];
}

export interface ClockReading {
  /** The server's now() minus ours at the middle of the round trip, in ms. */
  skewMs: number;
  /** How long the round trip took: the skew is known to within half of it. */
  roundTripMs: number;
}

export interface CredentialUse {
  credential: string;
  url: string;
  /** `source x`, `import y`. */
  usedBy: string;
}

/**
 * Reads the registry without changing it: no migration, no file created, a
 * SQLite file opened read-only. `timeoutMs` bounds connecting to PostgreSQL.
 */
export async function readRegistryFacts(url: string, options: { timeoutMs: number }): Promise<RegistryFacts> {
  const dialect = databaseDialect(url.trim());
  if (dialect === 'sqlite') return readSqlite(sqliteFilePath(url.trim()));
  if (dialect === 'postgres') return readPostgres(url.trim(), options.timeoutMs);
  throw new Error('the database URL has no supported scheme (sqlite:<file> or postgres://…)');
}

async function readSqlite(file: string): Promise<RegistryFacts> {
  const version = `SQLite ${sqliteVersion()}`;
  if (file !== ':memory:' && !existsSync(file)) return { ...empty('sqlite', version), absent: true };
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file, { readonly: true, fileMustExist: true }) }) });
  try {
    return { ...(await readLists(db, empty('sqlite', version), undefined)), clock: undefined };
  } finally {
    await db.destroy();
  }
}

async function readPostgres(url: string, timeoutMs: number): Promise<RegistryFacts> {
  // Loaded only when a PostgreSQL registry is configured, as the store does.
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, allowExitOnIdle: true });
  pool.on('error', () => {}); // a connection lost while idle is not this command's concern
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  try {
    const started = Date.now();
    const { rows } = await sql<{ version: string; now_ms: string | number; schema: string }>`select version() as version, (extract(epoch from clock_timestamp()) * 1000)::float8 as now_ms, current_schema() as schema`.execute(db);
    const ended = Date.now();
    const row = rows[0]!;
    const clock = { skewMs: Math.round(Number(row.now_ms) - (started + ended) / 2), roundTripMs: ended - started };
    return { ...(await readLists(db, empty('postgres', row.version.split(' on ')[0]!), row.schema)), clock };
  } finally {
    await db.destroy();
  }
}

/** The SQLite library forgesync links (better-sqlite3 bundles its own): the file's version is whatever opens it. */
function sqliteVersion(): string {
  const memory = new BetterSqlite3(':memory:');
  try {
    return (memory.prepare('select sqlite_version() as version').get() as { version: string }).version;
  } finally {
    memory.close();
  }
}

function empty(dialect: StoreDialect, version: string): RegistryFacts {
  return { dialect, version, absent: false, clock: undefined, unmigrated: false, feeds: [], shards: [], credentialUses: [] };
}

/**
 * The feeds, shards and credential uses; a database without the tables yet
 * (never opened by forgesync) has none. On PostgreSQL only the tables of
 * `schema` (the first of the search path) count: another schema's are another registry's.
 * @throws RegistryUnreadableError when the server answered but the tables could not be read.
 */
async function readLists(db: Kysely<Schema>, facts: RegistryFacts, schema: string | undefined): Promise<RegistryFacts> {
  try {
    const tables = new Set((await db.introspection.getTables()).filter((table) => schema === undefined || table.schema === schema).map((table) => table.name));
    if (!['sources', 'feeds', 'shards', 'imports'].every((name) => tables.has(name))) return { ...facts, unmigrated: true };
    return await readRows(db, facts);
  } catch (error) {
    throw new RegistryUnreadableError(facts.version, error);
  }
}

/** The database answered (its version is known) but forgesync's tables could not be read: permissions, a damaged file, a schema of another version. */
export class RegistryUnreadableError extends UnavailableError {
  constructor(
    readonly version: string,
    cause: unknown,
  ) {
    super(`${version} answered, but reading forgesync's tables failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

async function readRows(db: Kysely<Schema>, facts: RegistryFacts): Promise<RegistryFacts> {
  const feeds = await db.selectFrom('feeds').select(['name', 'sink', 'secret']).orderBy('name').execute();
  const shards = await db.selectFrom('shards').select(['id', 'node', 'data_dir', 'state', 'last_seen_at']).orderBy('id').execute();
  const sources = await db.selectFrom('sources').select(['name', 'url', 'credential_ref']).where('credential_ref', 'is not', null).orderBy('name').execute();
  const imports = await db.selectFrom('imports').select(['name', 'api_url', 'credentials']).orderBy('name').execute();
  const credentialUses: CredentialUse[] = sources.map((source) => ({ credential: source.credential_ref!, url: source.url, usedBy: `source ${source.name}` }));
  for (const row of imports) {
    for (const credential of namesIn(row.credentials)) credentialUses.push({ credential, url: row.api_url, usedBy: `import ${row.name}` });
  }
  return {
    ...facts,
    feeds,
    shards: shards.map((shard) => ({ id: shard.id, node: shard.node, dataDir: shard.data_dir, state: shard.state, lastSeenAt: Number(shard.last_seen_at) })),
    credentialUses,
  };
}

/** The names in an import's `credentials` column (a JSON array of names). */
function namesIn(column: string): string[] {
  try {
    const names: unknown = JSON.parse(column);
    return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string') : [];
  } catch {
    return [];
  }
}
