import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database, StoreDialect } from '../../store/database.js';
import { SourceExistsError, SourceNotFoundError } from '../../store/errors.js';
import { run, runBatch } from '../../store/batch.js';
import { matchKey } from '../../util/match-key.js';
import {
  fenceText,
  registryColumns,
  selectSourcesByIds,
  selectSourcesWithRegistry,
  toRegistryRow,
  toSource,
  toSourceWithRegistry,
  type RegistryRecord,
  type SourceRecord,
} from './rows.js';
import { prepared, requestedChanges, type PreparedQuery } from '../../store/sql.js';
import type { RegistryState, Schema, Source, SourceWithRegistry } from '../../store/types.js';

/** Ids in one `IN (…)` of findByIds (well under SQLite's and PostgreSQL's parameter limits). */
const IDS_PER_STATEMENT = 500;

/** What a new source is made of; names are validated by the caller. */
export interface CreateSourceInput {
  name: string;
  url: string;
  credentialRef?: string | null;
  intervalMs?: number | null;
  cron?: string | null;
  enabled?: boolean;
  /** The storage shard it is placed on (see cluster/placement.ts); null or absent: not placed yet. */
  shard?: string | null;
}

/** Fields of a source to change; absent fields are left as they are (its shard changes only by a move). */
export type SourcePatch = Partial<Omit<CreateSourceInput, 'shard'>>;

/** Which sources list() and count() return. */
export interface SourceFilter {
  state?: RegistryState;
  /** Case-insensitive substring of the name or the URL. */
  search?: string;
  limit?: number;
  offset?: number;
}

/** Sources and their registry rows, created and removed together. */
export class SourceRepository {
  readonly #db: Kysely<Schema>;
  readonly #dialect: StoreDialect;
  // Every sync and request looks a source up: compiled once (see PreparedQuery).
  readonly #byName: PreparedQuery<[name: string], SourceRecord & RegistryRecord>;
  readonly #byId: PreparedQuery<[id: number], SourceRecord & RegistryRecord>;

  constructor(database: Pick<Database, 'db' | 'dialect'>) {
    const db = (this.#db = database.db);
    this.#dialect = database.dialect;
    this.#byName = prepared(db, (arg) => selectSourcesWithRegistry(db).where('s.name', '=', arg(0)));
    this.#byId = prepared(db, (arg) => selectSourcesWithRegistry(db).where('s.id', '=', arg(0)));
  }

  /**
   * Registers a source with its registry row (state `pending`, one request
   * recorded so the first sync happens), in one transaction.
   * @throws SourceExistsError when the name is taken.
   */
  async create(input: CreateSourceInput): Promise<SourceWithRegistry> {
    const now = Date.now();
    const db = this.#db;
    try {
      const { source, registry } = await runBatch(db, function* () {
        const source = (yield* run(
          db
            .insertInto('sources')
            .values({
              name: input.name,
              url: input.url,
              match_key: matchKey(input.url),
              credential_ref: input.credentialRef ?? null,
              interval_ms: input.intervalMs ?? null,
              cron: input.cron ?? null,
              enabled: input.enabled === false ? 0 : 1,
              shard_id: input.shard ?? null,
              created_at: now,
              updated_at: now,
            })
            .returningAll(),
        )).rows[0]!;
        const registry = (yield* run(
          db
            .insertInto('registry')
            .values({
              source_id: Number(source.id),
              state: 'pending',
              retry_count: 0,
              verification_state: 'unverified',
              missing_on_primary: 0,
              requested_seq: 1,
              completed_seq: 0,
              target_seq: 0,
              // Due at once, whatever clock the caller's requests use.
              next_run_at: input.enabled === false ? null : 0,
              updated_at: now,
            })
            .returning([...registryColumns, fenceText]),
        )).rows[0]!;
        return { source, registry };
      });
      return { ...toSource(source), registry: toRegistryRow(registry) };
    } catch (error) {
      if (isUniqueViolation(error)) throw new SourceExistsError(input.name);
      throw error;
    }
  }

  /** The source named `name`, or undefined. */
  async find(name: string): Promise<SourceWithRegistry | undefined> {
    const row = (await this.#byName.execute(name)).rows[0];
    return row ? toSourceWithRegistry(row) : undefined;
  }

  /** @throws SourceNotFoundError when no source is named `name`. */
  async get(name: string): Promise<SourceWithRegistry> {
    const source = await this.find(name);
    if (!source) throw new SourceNotFoundError(name);
    return source;
  }

  /** The source with id `id`, or undefined. */
  async findById(id: number): Promise<SourceWithRegistry | undefined> {
    const row = (await this.#byId.execute(id)).rows[0];
    return row ? toSourceWithRegistry(row) : undefined;
  }

  /** The sources among `ids` that exist, read a few hundred a statement. */
  async findByIds(ids: readonly number[]): Promise<SourceWithRegistry[]> {
    const found: SourceWithRegistry[] = [];
    for (let from = 0; from < ids.length; from += IDS_PER_STATEMENT) {
      const chunk = ids.slice(from, from + IDS_PER_STATEMENT);
      const rows = await selectSourcesByIds(this.#db, chunk).execute();
      found.push(...rows.map(toSourceWithRegistry));
    }
    return found;
  }

  /**
   * Sources whose URL has one of the match `keys` (see match-key.ts), by
   * name; one indexed lookup, for webhooks. Disabled sources are included
   * (the caller decides what to do with them).
   */
  async findByMatchKeys(keys: readonly string[]): Promise<Source[]> {
    const unique = [...new Set(keys)].filter(Boolean);
    if (unique.length === 0) return [];
    const rows = await this.#db
      .selectFrom('sources')
      .select(['id', 'name', 'url', 'credential_ref', 'interval_ms', 'cron', 'enabled', 'created_at', 'updated_at', 'shard_id', 'placement_epoch', 'move_to'])
      .where('match_key', 'in', unique)
      .orderBy('name')
      .execute();
    return rows.map(toSource);
  }

  /** Places source `id` on `shard` unless it has a shard already; returns the shard it is on. */
  async place(id: number, shard: string): Promise<string | null> {
    await this.#db.updateTable('sources').set({ shard_id: shard }).where('id', '=', id).where('shard_id', 'is', null).execute();
    const row = await this.#db.selectFrom('sources').select('shard_id').where('id', '=', id).executeTakeFirst();
    return row?.shard_id ?? null;
  }

  /** Sources matching `filter`, sorted by name (code point order on both dialects). */
  async list(filter: SourceFilter = {}): Promise<SourceWithRegistry[]> {
    let query = selectSourcesWithRegistry(this.#db)
      .where(filterCondition(filter))
      .orderBy(this.#dialect === 'postgres' ? sql`s.name collate "C"` : sql`s.name`);
    if (filter.limit !== undefined || filter.offset !== undefined) {
      // SQLite accepts OFFSET only after a LIMIT.
      query = query.limit(filter.limit ?? Number.MAX_SAFE_INTEGER).offset(filter.offset ?? 0);
    }
    return (await query.execute()).map(toSourceWithRegistry);
  }

  /** How many sources match `filter` (limit and offset ignored). */
  async count(filter: Omit<SourceFilter, 'limit' | 'offset'> = {}): Promise<number> {
    const row = await this.#db
      .selectFrom('sources as s')
      .innerJoin('registry as r', 'r.source_id', 's.id')
      .where(filterCondition(filter))
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Changes a source. A new URL resets the checksum and verification and
   * records a request (the mirror must be fetched from the new upstream).
   * @throws SourceNotFoundError when no source is named `name`.
   * @throws SourceExistsError when renaming onto a taken name.
   */
  async update(name: string, patch: SourcePatch): Promise<SourceWithRegistry> {
    const now = Date.now();
    const values = {
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.url !== undefined ? { url: patch.url, match_key: matchKey(patch.url) } : {}),
      ...(patch.credentialRef !== undefined ? { credential_ref: patch.credentialRef } : {}),
      ...(patch.intervalMs !== undefined ? { interval_ms: patch.intervalMs } : {}),
      ...(patch.cron !== undefined ? { cron: patch.cron } : {}),
      ...(patch.enabled !== undefined ? { enabled: patch.enabled ? 1 : 0 } : {}),
    };
    const db = this.#db;
    try {
      const row = await runBatch(db, function* () {
        // A new URL: the mirror must be fetched again from the new upstream.
        if (patch.url !== undefined) {
          yield* run(
            db
              .updateTable('registry')
              .set({
                ...requestedChanges(now),
                checksum: null,
                verification_state: 'unverified',
                verified_at: null,
                missing_on_primary: 0,
              })
              .where('source_id', '=', (eb) => eb.selectFrom('sources').select('id').where('name', '=', name).where('url', '<>', patch.url!)),
          );
        }
        const found = (yield* run(db.updateTable('sources').set({ ...values, updated_at: now }).where('name', '=', name).returning('id'))).rows[0];
        if (!found) throw new SourceNotFoundError(name);
        // Disabled: never due; enabled, or a new schedule: looked at now (the scheduler decides).
        if (patch.enabled !== undefined || patch.intervalMs !== undefined || patch.cron !== undefined) {
          yield* run(db.updateTable('registry').set({ next_run_at: patch.enabled === false ? null : now }).where('source_id', '=', Number(found.id)));
        }
        return (yield* run(selectSourcesWithRegistry(db).where('s.id', '=', Number(found.id)))).rows[0]!;
      });
      return toSourceWithRegistry(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new SourceExistsError(patch.name ?? name);
      throw error;
    }
  }

  /** Deletes a source with its registry row and attempts; false when there was none. */
  async remove(name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('sources').where('name', '=', name).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

function filterCondition(filter: Omit<SourceFilter, 'limit' | 'offset'>): RawBuilder<boolean> {
  const parts: RawBuilder<unknown>[] = [sql`1 = 1`];
  if (filter.state) parts.push(sql`r.state = ${filter.state}`);
  if (filter.search) {
    const pattern = `%${filter.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    parts.push(sql`(lower(s.name) like ${pattern} escape '\\' or lower(s.url) like ${pattern} escape '\\')`);
  }
  return sql<boolean>`(${sql.join(parts, sql` and `)})`;
}

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}
