import { boolean, duration, integer, setting, text } from '../config/setting.js';
import { decodeWebhookSecret } from './webhooks/standard.js';

/** A Standard Webhooks secret (`whsec_<base64>`), checked here so a bad one stops the start, not every delivery. */
function standardWebhookSecret(value: unknown): string {
  const secret = text()(value).trim();
  decodeWebhookSecret(secret);
  return secret;
}

/** Settings of the replication module: capacity, schedules, retries, verification and webhook secrets. */
export const replicationSettings = {
  maxConcurrentSyncs: setting({
    key: 'maxConcurrentSyncs',
    env: 'FORGESYNC_MAX_CONCURRENT_SYNCS',
    default: '4',
    doc: 'Syncs running at once in one process.',
    parse: integer(1, 256),
  }),
  syncIntervalMs: setting({
    key: 'syncInterval',
    env: 'FORGESYNC_SYNC_INTERVAL',
    default: '1h',
    doc: 'Sync interval of sources without a schedule of their own.',
    parse: duration(1000),
  }),
  retryBaseMs: setting({
    key: 'retryBase',
    env: 'FORGESYNC_RETRY_BASE',
    default: '15s',
    doc: 'First retry delay after a failed sync; doubles per failure, with jitter.',
    parse: duration(1),
  }),
  retryMaxMs: setting({
    key: 'retryMax',
    env: 'FORGESYNC_RETRY_MAX',
    default: '1h',
    doc: 'Cap of the retry delay, and the retry cadence of an upstream that is gone.',
    parse: duration(1),
  }),
  verifyIntervalMs: setting({
    key: 'verifyInterval',
    env: 'FORGESYNC_VERIFY_INTERVAL',
    default: '24h',
    doc: 'How often a synced mirror is re-checked against its recorded refs checksum.',
    parse: duration(1000),
  }),
  housekeeping: setting({
    key: 'housekeeping',
    env: 'FORGESYNC_HOUSEKEEPING',
    default: 'true',
    doc: 'Keep mirrors packed after their syncs, under the source\'s lease (geometric repacks with bitmaps and a multi-pack index, packed refs, commit-graphs, pruning): the mirror is measured after every sync and work runs only when due.',
    parse: boolean,
  }),
  housekeepingIntervalMs: setting({
    key: 'housekeepingInterval',
    env: 'FORGESYNC_HOUSEKEEPING_INTERVAL',
    default: '1h',
    doc: 'The longest a mirror with a few loose objects or refs waits to be packed (past 100 of either, or 4 new packs, it is packed after the sync that made them).',
    parse: duration(60_000),
  }),
  housekeepingPruneGraceMs: setting({
    key: 'housekeepingPruneGrace',
    env: 'FORGESYNC_HOUSEKEEPING_PRUNE_GRACE',
    default: '14d',
    doc: 'How long an object no ref reaches is kept after it was written or last served (a clone or snapshot that started before a ref moved has this long); the weekly full repack deletes older ones.',
    parse: duration(60_000),
  }),
  webhookReaderThreads: setting({
    key: 'webhookReaderThreads',
    env: 'FORGESYNC_WEBHOOK_READER_THREADS',
    default: '1',
    doc: 'Threads that check GitHub and GitLab deliveries\' signatures and parse their payloads, off the event loop that serves every request; 0 reads them on the event loop.',
    parse: integer(0, 16),
  }),
  githubWebhookSecret: setting({
    key: 'githubWebhookSecret',
    env: 'FORGESYNC_GITHUB_WEBHOOK_SECRET',
    doc: 'HMAC secret of GitHub webhooks (`X-Hub-Signature-256`).',
    parse: text(),
  }),
  gitlabWebhookToken: setting({
    key: 'gitlabWebhookToken',
    env: 'FORGESYNC_GITLAB_WEBHOOK_TOKEN',
    doc: 'Secret token of GitLab webhooks (`X-Gitlab-Token`).',
    parse: text(),
  }),
  genericWebhookSecret: setting({
    key: 'genericWebhookSecret',
    env: 'FORGESYNC_GENERIC_WEBHOOK_SECRET',
    doc: 'Standard Webhooks secret of the generic webhook: `whsec_` and the base64 of 24 to 64 random bytes (`whsec_$(openssl rand -base64 32)`).',
    parse: standardWebhookSecret,
  }),
};
