import type { LeaseHolder } from '../leases/types.js';

export { leaseHolderJson as holderJson } from '../leases/json.js';

/** One line per holder: `key  name(pid)@host  fence N  expires in Xs`. */
export function holderLine(holder: LeaseHolder, now = Date.now()): string {
  const left = Math.max(0, (holder.expiresAt.getTime() - now) / 1000).toFixed(1);
  return `${holder.key}\t${holder.owner.name}(${holder.owner.pid})@${holder.owner.host}\tfence ${holder.fence}\texpires in ${left}s`;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
