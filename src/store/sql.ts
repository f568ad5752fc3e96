import { sql, type Compilable, type CompiledQuery, type Kysely, type QueryResult, type RawBuilder } from 'kysely';
import { runOnSqlite, sqliteHandle, type SqliteHandle } from './connect.js';
import { nameStatement } from './statement-names.js';
import type { RegistryState, Schema } from './types.js';

/**
 * The registry changes that record one request: the counter goes up, and a
 * settled row (synced, or failed and waiting out a backoff) becomes pending
 * again at once. A started row stays started: the running sync sees the
 * higher counter when it finishes and leaves the row pending.
 * Right-hand sides read the row's old values (standard UPDATE semantics).
 */
export function requestedChanges(nowMs: number) {
  return {
    requested_seq: sql<number>`requested_seq + 1`,
    state: sql<RegistryState>`case when state in ('synced', 'failed') then 'pending' else state end`,
    next_retry_at: sql<number | null>`case when state in ('synced', 'failed') then null else next_retry_at end`,
    // Due now, unless a round is running (it serves the request or leaves the row pending) or
    // the row already waits, due since earlier: it keeps its place, and on PostgreSQL a
    // request that changes no indexed column is a HOT update (no index entries written).
    next_run_at: sql<number | null>`case when state = 'started' or (state = 'pending' and next_run_at <= ${nowMs}) then next_run_at else ${nowMs} end`,
    updated_at: nowMs,
  };
}

/**
 * The fencing guard: a write on behalf of a lease holder applies only when
 * the row was last written by the same or an older holder (or none).
 */
export function fenceGuard(fence: bigint): RawBuilder<boolean> {
  return sql<boolean>`(fence is null or fence <= ${fence})`;
}

/** Stands for argument `index` of a {@link PreparedQuery} while it is compiled. */
class Slot {
  constructor(readonly index: number) {}
}

/** Where argument `index` goes in a query built by {@link prepared}; typed as the argument. */
export type Arg<A extends readonly unknown[]> = <I extends number>(index: I) => A[I];

/**
 * A query built and compiled once, then executed with fresh values.
 *
 * Kysely builds and compiles a query's AST on every call, which on the sync
 * hot path costs several times what the statement itself does (about 50 µs
 * against 10 µs on SQLite). A prepared query is built by `build` with
 * `arg(i)` wherever value i goes, compiled by the database's own dialect
 * on first use (placeholders and quoting as Kysely writes them, so SQLite
 * and PostgreSQL both get their SQL), and then only its parameters are
 * replaced. Arguments are values only: they cannot change the query's shape
 * (build one prepared query per shape), and each must reach the SQL as a
 * parameter, which compiling checks. Every other value stays as compiled.
 * (So an argument compared with `=` cannot stand for NULL: Kysely never saw it.)
 *
 *   const byId = prepared<[id: number], Row>(db, (arg) => db.selectFrom('t').selectAll().where('id', '=', arg(0)));
 *   const { rows } = await byId.execute(42);
 *
 * On SQLite the statement runs on the better-sqlite3 handle directly, with
 * the same statement cache and result shape as Kysely's driver, unless a
 * transaction is open on the handle (a Kysely transaction holding the
 * connection): then it goes through Kysely and waits its turn.
 */
export class PreparedQuery<A extends readonly unknown[], O> {
  readonly #db: Kysely<Schema>;
  readonly #sqlite: SqliteHandle | undefined;
  readonly #build: (arg: Arg<A>) => Compilable<O>;
  #compiled: CompiledQuery<O> | undefined;
  /** Per parameter: the argument that fills it, or -1 to keep the compiled constant. */
  #sources: number[] = [];

  constructor(db: Kysely<Schema>, build: (arg: Arg<A>) => Compilable<O>) {
    this.#db = db;
    this.#sqlite = sqliteHandle(db);
    this.#build = build;
  }

  /** Runs the query with `args` (null, not undefined, for SQL NULL). */
  execute(...args: A): Promise<QueryResult<O>> {
    if (this.#sqlite && !this.#sqlite.raw.inTransaction) {
      try {
        return Promise.resolve(this.runSqlite(this.#sqlite, args));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#db.executeQuery<O>(this.#withArgs(args));
  }

  /** This query with `args` as a Compilable: a step of a list of Kysely queries (an import page's, a feed run's). */
  bind(...args: A): Compilable<O> {
    return { compile: () => this.#withArgs(args) };
  }

  /** This query with `args`, as a batch yields it (see batch.ts: `yield* run(query, ...args)`). */
  with(...args: A): BoundQuery<O> {
    return { query: this as unknown as PreparedQuery<readonly unknown[], O>, args };
  }

  /** @internal Runs the statement on a SQLite handle, synchronously, as Kysely's SQLite driver would. */
  runSqlite(sqlite: SqliteHandle, args: A): QueryResult<O> {
    const { sql: text, parameters } = this.#withArgs(args);
    return runOnSqlite<O>(sqlite, text, parameters);
  }

  /** The compiled query with `args` in place of the arguments' slots. */
  #withArgs(args: A): CompiledQuery<O> {
    const compiled = this.#compiled ?? this.#compile();
    const sources = this.#sources;
    const constants = compiled.parameters;
    const parameters = new Array<unknown>(sources.length);
    for (let i = 0; i < sources.length; i++) {
      const source = sources[i]!;
      parameters[i] = source < 0 ? constants[i] : args[source];
    }
    return { query: compiled.query, queryId: compiled.queryId, sql: compiled.sql, parameters };
  }

  #compile(): CompiledQuery<O> {
    const slots: Slot[] = [];
    const arg = ((index: number) => (slots[index] ??= new Slot(index))) as unknown as Arg<A>;
    const compiled = this.#build(arg).compile();
    const sources = compiled.parameters.map((value) => (value instanceof Slot ? value.index : -1));
    slots.forEach((slot, index) => {
      if (!sources.includes(index)) throw new Error(`prepared query: argument ${index} is not a parameter of ${compiled.sql}`);
    });
    this.#sources = sources;
    this.#compiled = compiled;
    nameStatement(compiled.sql);
    return compiled;
  }
}

/** Shorthand for `new PreparedQuery(db, build)`. */
export function prepared<A extends readonly unknown[], O>(db: Kysely<Schema>, build: (arg: Arg<A>) => Compilable<O>): PreparedQuery<A, O> {
  return new PreparedQuery(db, build);
}

/** A prepared query with its arguments: a statement of a batch (see batch.ts). */
export interface BoundQuery<O = unknown> {
  query: PreparedQuery<readonly unknown[], O>;
  args: readonly unknown[];
}
