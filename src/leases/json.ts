import type { LeaseHolder } from './types.js';

/** A lease holder as plain JSON, the same for the CLI and the API. */
export interface LeaseHolderJson {
  key: string;
  /** Decimal string: fences are 64-bit. */
  fence: string;
  owner: { name: string; pid: number; host: string; acquiredAt: string };
  expiresAt: string;
  /** Time left by the server's clock, so a reader's clock does not matter. */
  expiresInMs: number;
}

export function leaseHolderJson(holder: LeaseHolder, now = Date.now()): LeaseHolderJson {
  return {
    key: holder.key,
    fence: holder.fence.toString(),
    owner: {
      name: holder.owner.name,
      pid: holder.owner.pid,
      host: holder.owner.host,
      acquiredAt: holder.owner.acquiredAt.toISOString(),
    },
    expiresAt: holder.expiresAt.toISOString(),
    expiresInMs: Math.max(0, Math.round(holder.expiresAt.getTime() - now)),
  };
}
