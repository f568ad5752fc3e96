import type { LeaseHolder } from '../leases/types.js';

/** A holder as plain JSON: fence as a decimal string (it is a 64-bit number), times as ISO strings. */
export function holderJson(holder: LeaseHolder) {
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
  };
}

/** One line per holder: `key  name(pid)@host  fence N  expires in Xs`. */
export function holderLine(holder: LeaseHolder, now = Date.now()): string {
  const left = Math.max(0, (holder.expiresAt.getTime() - now) / 1000).toFixed(1);
  return `${holder.key}\t${holder.owner.name}(${holder.owner.pid})@${holder.owner.host}\tfence ${holder.fence}\texpires in ${left}s`;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
