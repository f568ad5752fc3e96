import { localRefs, refsChecksum } from '../git/mirror.js';
import type { GitRunner } from '../git/runner.js';
import { writeFenced } from '../leases/fenced.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { RegistryRepository } from './store/registry.js';
import { syncLeaseKey } from './sync.js';

/** What a re-verification found. */
export type VerifyOutcome = 'verified' | 'mismatch' | 'skipped' | 'gone';

/**
 * Periodic re-verification: recomputes the checksum of a mirror's refs and
 * compares it with the one recorded when it was last synced. A mirror that
 * changed behind forgesync's back (disk fault, manual edit, lost refs) is
 * marked `mismatch` and a sync is requested. Runs under the source's lease so
 * it never reads a mirror that a sync is changing.
 */
export class Verifier {
  constructor(
    private readonly options: { registry: RegistryRepository; leases: LeaseManager; runner: GitRunner; logger: Logger; leaseTtlMs: number },
  ) {}

  async verify(sourceId: number, shutdown?: AbortSignal): Promise<VerifyOutcome> {
    const { registry, leases, runner, logger, leaseTtlMs } = this.options;
    const run = await leases.tryWithLease(
      syncLeaseKey(sourceId),
      { ttlMs: leaseTtlMs, owner: 'verify', ...(shutdown ? { signal: shutdown } : {}) },
      async (lease, signal): Promise<VerifyOutcome> => {
        const row = await registry.find(sourceId);
        if (!row || row.state !== 'synced' || !row.mirrorPath) return 'gone';
        let checksum: string | null = null;
        try {
          checksum = refsChecksum(await localRefs(runner, row.mirrorPath, { signal }));
        } catch (error) {
          if (signal.aborted) return 'skipped';
          logger.warn({ event: 'verify_unreadable', source_id: sourceId, err: String(error) }, 'mirror unreadable during verification');
        }
        const verified = checksum !== null && checksum === row.checksum;
        const written = await writeFenced(
          lease,
          async (fence) => ((await registry.markVerification(sourceId, fence, { checksum, verified, now: new Date() })) ? true : null),
          async () => row.fence,
        ).catch(() => null);
        if (!written) return 'skipped';
        if (!verified) {
          logger.warn({ event: 'verify_mismatch', source_id: sourceId, expected: row.checksum, actual: checksum }, 'mirror refs do not match the last sync; resync requested');
        }
        return verified ? 'verified' : 'mismatch';
      },
    );
    return run.ran ? run.value : 'skipped';
  }
}
