import type { Forgesync } from '../../src/app/forgesync.js';
import { CredentialStore } from '../../src/credentials/store.js';
import { parseProtocols } from '../../src/git/url.js';
import { SyncService } from '../../src/replication/sync.js';
import { Verifier } from '../../src/replication/verify.js';
import { replicationStores } from './stores.js';

/*
 * Tests of one replication component (one SyncService round, one
 * verification) build it over the app's database, leases, git runner and
 * settings, as the replication module builds its own (src/replication/module.ts),
 * rather than reaching into the module. The component works on the same rows
 * and the same leases, so it meets the app's own workers exactly as another
 * worker of the app would.
 */

/**
 * A SyncService as the app's: the same stores, leases, runner, credentials,
 * mirrors directory, lease ttl, backoff and (where jobs are routed by shard)
 * local shard. Work it leaves pending is nudged through the replication API.
 * It reports no metrics and does not wake the feeds (no test of it needs either).
 */
export function syncServiceOf(app: Forgesync): SyncService {
  const { config, logger } = app;
  const { sources, registry } = replicationStores(app);
  const credentials = new CredentialStore({ secretsFile: config.secretsFile, logger, protocols: parseProtocols(config.gitProtocols) });
  const nudge = (source: { id: number }) => void app.replication.nudge([source.id]).catch(() => undefined);
  return new SyncService({
    sources,
    registry,
    leases: app.kernel.leases,
    runner: app.runner,
    tokenFor: (credential, url) => credentials.tokenFor(credential, url),
    logger,
    storage: config.mirrorsDir,
    leaseTtlMs: config.leaseTtlMs,
    backoff: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
    onPending: nudge,
    onElsewhere: nudge,
    // As the cluster module decides it: placement is enforced only where jobs are routed by shard.
    ...(config.jobsUrl !== undefined ? { localShard: config.shardId } : {}),
  });
}

/** A Verifier as the app's: the same registry, leases, runner and lease ttl. */
export function verifierOf(app: Forgesync): Verifier {
  return new Verifier({ registry: replicationStores(app).registry, leases: app.kernel.leases, runner: app.runner, logger: app.logger, leaseTtlMs: app.config.leaseTtlMs });
}
