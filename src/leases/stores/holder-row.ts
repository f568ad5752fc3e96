import type { LeaseHolder } from '../types.js';

/** The owner, fence and time columns every SQL lease table shares. */
export interface HolderColumns {
  /** A bigint column, however the driver hands it over (bigint, number or decimal string). */
  fence: bigint | number | string;
  owner_name: string | null;
  owner_pid: number | bigint | null;
  owner_host: string | null;
  /** A timestamp column, or epoch milliseconds. */
  acquired_at: Date | number | bigint;
  expires_at: Date | number | bigint;
}

const toDate = (value: Date | number | bigint): Date => (value instanceof Date ? value : new Date(Number(value)));

/** A live holder from the row of a SQL lease table (SQLite, PostgreSQL, MySQL). */
export function holderFromRow(key: string, row: HolderColumns): LeaseHolder {
  return {
    key,
    fence: BigInt(row.fence),
    owner: {
      name: row.owner_name ?? '',
      pid: Number(row.owner_pid ?? 0),
      host: row.owner_host ?? '',
      acquiredAt: toDate(row.acquired_at),
    },
    expiresAt: toDate(row.expires_at),
  };
}
