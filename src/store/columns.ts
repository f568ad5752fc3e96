import type { ColumnType } from 'kysely';

/*
 * The column types of the registry store's tables (types.ts, feed-tables.ts,
 * import-tables.ts), declared once. Each is Kysely's ColumnType<read, insert,
 * update>: what a SELECT gives back, what an INSERT takes, what an UPDATE
 * takes. Both dialects store the same values; what comes back differs:
 * better-sqlite3 returns an INTEGER as a number, and the PostgreSQL pool
 * parses a BIGINT into a number too (connect.ts), but an expression over one
 * (a sum is NUMERIC) or a client without that parser gives text. So 64-bit
 * columns read as `number | string`, and readers go through Number() (or
 * BigInt() of a text cast, for fences; see rows.ts).
 */

/** Epoch milliseconds: INTEGER on SQLite, BIGINT on PostgreSQL. Written as a number. */
export type Millis = ColumnType<number | string, number, number>;

/** A 64-bit number (a change's seq, a feed's cursor): INTEGER on SQLite, BIGINT on PostgreSQL. Written as a number or a bigint. */
export type Big = ColumnType<number | string, number | bigint, number | bigint>;

/** {@link Big}, or NULL. */
export type NullableBig = ColumnType<number | string | null, number | bigint | null, number | bigint | null>;

/** {@link Big} with a default (0): optional on insert. */
export type DefaultedBig = ColumnType<number | string, number | bigint | undefined, number | bigint>;

/** A 64-bit count with a default (0): INTEGER on SQLite, BIGINT on PostgreSQL. Written as a number; optional on insert. */
export type Count = ColumnType<number | string, number | undefined, number>;

/** A column with a default, of a type both dialects read back as written (INTEGER, TEXT): optional on insert. */
export type Defaulted<T> = ColumnType<T, T | undefined, T>;

/**
 * A lease fence: INTEGER on SQLite, BIGINT on PostgreSQL, NULL until a
 * holder writes the row. Written as a bigint; read back only through
 * `cast(fence as text)` so that no driver rounds it through a double.
 */
export type FenceColumn = ColumnType<string | number | bigint | null, bigint | null, bigint | null>;
