import { duration, integer, parseSize, setting } from '../config/setting.js';

/** Settings of the GitHub importer: pacing, retries, stall detection, the sync schedule and the attachment cap. */
export const importerSettings = {
  importConcurrency: setting({
    key: 'importConcurrency',
    env: 'FORGESYNC_IMPORT_CONCURRENCY',
    default: '20',
    doc: 'Requests one import has in flight at once, in all: in distributed mode each live worker takes its share (GitHub\'s secondary limit allows 100); `import github --concurrency` overrides it per import.',
    parse: integer(1, 100),
  }),
  importSyncIntervalMs: setting({
    key: 'importSyncInterval',
    env: 'FORGESYNC_IMPORT_SYNC_INTERVAL',
    default: '1h',
    doc: 'How often a finished import is brought up to date (an incremental sync).',
    parse: duration(1000),
  }),
  importReconcileIntervalMs: setting({
    key: 'importReconcileInterval',
    env: 'FORGESYNC_IMPORT_RECONCILE_INTERVAL',
    default: '24h',
    doc: 'How often a sync also lists issues, comments and review comments in full, to drop from the copy what was deleted upstream (`since` cannot tell). Small lists are compared on every sync.',
    parse: duration(1000),
  }),
  importStallTimeoutMs: setting({
    key: 'importStallTimeout',
    env: 'FORGESYNC_IMPORT_STALL_TIMEOUT',
    default: '15m',
    doc: 'A stage that makes no progress for this long fails (resumable) with where it stopped. Waits for a rate-limit reset do not count.',
    parse: duration(1000),
  }),
  importRetryBaseMs: setting({
    key: 'importRetryBase',
    env: 'FORGESYNC_IMPORT_RETRY_BASE',
    default: '1s',
    doc: "First retry delay of a GitHub request (5xx, connection reset) or of an import's database write or read (pool timeout, connection ended, lock, serialisation or busy timeout) that failed; doubles per attempt, with jitter. A run that fails for such a cause all the same is resumed by the scheduler after base × 2^retries, doubling per failure in a row, at most the sync interval.",
    parse: duration(1, 3_600_000),
  }),
  importRetries: setting({
    key: 'importRetries',
    env: 'FORGESYNC_IMPORT_RETRIES',
    default: '6',
    doc: "Retries of a failed GitHub request before the object is listed as a failure, and of an import's database step that failed for a transient cause before its run fails (to be resumed by the scheduler).",
    parse: integer(0, 50),
  }),
  importAttachmentMaxBytes: setting({
    key: 'importAttachmentMaxBytes',
    env: 'FORGESYNC_IMPORT_ATTACHMENT_MAX_BYTES',
    default: '25MiB',
    doc: 'Largest attachment or release asset downloaded; a bigger one is left as a link and listed as a failure.',
    parse: parseSize,
  }),
};
