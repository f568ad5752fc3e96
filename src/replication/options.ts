import type { Registry } from 'prom-client';
import type { SettingValues } from '../config/setting.js';
import type { CredentialStore } from '../credentials/store.js';
import type { GitRunner } from '../git/runner.js';
import type { JobTransport } from '../jobs/types.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { Database } from '../store/database.js';
import type { RegistryState, Source, SourceWithRegistry } from '../store/types.js';
import type { replicationSettings } from './settings.js';

/* What the replication module takes (its options) and the shapes its methods take and give. */

export interface AddSourceInput {
  url: string;
  name?: string;
  /** Interval like `1h`; default: the configured sync interval. */
  interval?: string;
  /** Cron expression, instead of an interval. */
  cron?: string;
  /** The name of a credential the operator defined, bound to the URL's host; never the secret. */
  credentialRef?: string;
}

/** A webhook delivery as Replication.oncePerDelivery remembers it. */
export interface WebhookDelivery {
  /** The receiver (`generic`): ids are unique per sender only. */
  provider: string;
  /** The sender's delivery id, the same on each retry of one event. */
  id: string;
  /** When the receiver checked the delivery's timestamp. */
  receivedAt: Date;
  /** When the delivery's timestamp leaves the receiver's window: a replay after it is refused anyway. */
  expiresAt: Date;
}

/** What became of a delivery given to Replication.oncePerDelivery: acted on (with act's value), or a duplicate. */
export type DeliveryRun<T> = { duplicate: false; value: T } | { duplicate: true };

/** Resync selection: one name, or every failed row, or all rows, or rows in a state. */
export type ResyncTarget = { name: string } | 'failed' | 'all' | { state: RegistryState };

/** How waiting for a sync ended: the source as it then is, and whether a successful round served the request. */
export type SyncWaitResult = SourceWithRegistry & { served: boolean };

export interface ReplicationOptions {
  database: Pick<Database, 'db' | 'dialect'>;
  leases: LeaseManager;
  jobs: Pick<JobTransport, 'shared' | 'enqueue' | 'load'>;
  logger: Logger;
  metrics: Registry;
  runner: GitRunner;
  credentials: Pick<CredentialStore, 'tokenFor'>;
  /** Protocols a source URL may use. */
  protocols: ReadonlySet<string>;
  mirrorsDir: string;
  leaseTtlMs: number;
  /** How often the scheduler looks for due work (FORGESYNC_SCHEDULER_TICK). */
  tickMs: number;
  settings: SettingValues<typeof replicationSettings>;
  /** Receives git's progress lines (clone/fetch), e.g. to draw them on a terminal. */
  onProgress?: (source: Source, line: string) => void;
  /** Told when a sync appended changes to the change log (the feeds then deliver them). */
  onChanges?: () => void;
  /**
   * The storage shard a source goes to (null: none is active yet, it is
   * placed when one registers). Unset: sources are not placed, and their
   * jobs carry no shard.
   */
  placeSource?: (name: string) => Promise<string | null>;
  /** The storage shard this process's mirrors are on, when jobs are routed by shard (see SyncServiceOptions.localShard). */
  localShard?: string;
  /** With jobs routed by shard: the shards whose workers are alive (their queues are where the scheduler's room is). */
  liveShards?: () => Promise<string[]>;
}
