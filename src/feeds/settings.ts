import { hostname } from 'node:os';
import { join } from 'node:path';
import { duration, integer, parseSize, path, setting, text } from '../config/setting.js';

/** Settings of the change feeds: the instance name events carry, retries, pacing and how long the change log keeps delivered changes. */
export const feedSettings = {
  instanceName: setting({
    key: 'instanceName',
    env: 'FORGESYNC_INSTANCE_NAME',
    default: () => hostname().toLowerCase().replace(/[^a-z0-9.-]/g, '-').slice(0, 63) || 'forgesync',
    defaultDoc: 'the host name',
    doc: 'Names this forgesync in the events it sends: `source` is `forgesync://<instance>/<module>/<name>` and event ids start with it. Keep it stable: receivers deduplicate by id.',
    parse: text({ pattern: /^[a-z0-9][a-z0-9.-]{0,62}$/, message: 'must be 1 to 63 lower-case letters, digits, dots or dashes' }),
  }),
  feedMaxAttempts: setting({
    key: 'feedMaxAttempts',
    env: 'FORGESYNC_FEED_MAX_ATTEMPTS',
    default: '15',
    doc: 'Deliveries of one change that may fail before it goes to the feed\'s dead letters (listed with its last error; `feed dead-letters --retry` sends them again).',
    parse: integer(1, 1000),
  }),
  feedRetryBaseMs: setting({
    key: 'feedRetryBase',
    env: 'FORGESYNC_FEED_RETRY_BASE',
    default: '1s',
    doc: 'First retry delay of a failed delivery; doubles per failure, with jitter, up to `feedRetryMax`. A `Retry-After` answer is honoured when longer.',
    parse: duration(1, 3_600_000),
  }),
  feedRetryMaxMs: setting({
    key: 'feedRetryMax',
    env: 'FORGESYNC_FEED_RETRY_MAX',
    default: '10m',
    doc: 'Longest retry delay of a failed delivery.',
    parse: duration(1, 86_400_000),
  }),
  feedTimeoutMs: setting({
    key: 'feedTimeout',
    env: 'FORGESYNC_FEED_TIMEOUT',
    default: '10s',
    doc: 'Time limit of one delivery (an HTTP request, a JetStream publish, a file written).',
    parse: duration(100, 600_000),
  }),
  feedPollMs: setting({
    key: 'feedPollInterval',
    env: 'FORGESYNC_FEED_POLL_INTERVAL',
    default: '1s',
    doc: 'How often a serving process looks for feeds with changes to deliver (the backstop: a sync that records changes nudges the feeds at once).',
    parse: duration(50, 600_000),
  }),
  feedChunk: setting({
    key: 'feedChunk',
    env: 'FORGESYNC_FEED_CHUNK',
    default: '500',
    doc: 'Events per chunk of a full sync (`feed resync`): the lease is held per chunk, so a partial sync waits at most one.',
    parse: integer(1, 100_000),
  }),
  feedFileRoot: setting({
    key: 'feedFileRoot',
    env: 'FORGESYNC_FEED_FILE_ROOT',
    // undefined when dataDir itself was refused: that problem is reported once, not twice.
    default: ({ values }) => (values.dataDir === undefined ? undefined : join(String(values.dataDir), 'feeds')),
    defaultDoc: '`<dataDir>/feeds`',
    doc: 'The directory file sinks (`file:///…`) must be inside: a feed naming a directory elsewhere, or one reached through a symbolic link leading out of it, is refused when added and when it delivers.',
    parse: path,
  }),
  feedFileMaxBytes: setting({
    key: 'feedFileMaxBytes',
    env: 'FORGESYNC_FEED_FILE_MAX_BYTES',
    default: '64MiB',
    doc: 'A file sink rolls the file it appends to into place, and starts the next, once it would grow past this size (a longer event gets a file of its own).',
    parse: parseSize,
  }),
  feedFileMaxAgeMs: setting({
    key: 'feedFileMaxAge',
    env: 'FORGESYNC_FEED_FILE_MAX_AGE',
    default: '1m',
    doc: 'A file sink rolls the file it appends to into place this long after it was opened, whatever its size: the longest a delivered event waits to appear under a final name (readers may tail the open `.current-` file sooner).',
    parse: duration(1000, 86_400_000),
  }),
  changeLogRetentionMs: setting({
    key: 'changeLogRetention',
    env: 'FORGESYNC_CHANGE_LOG_RETENTION',
    default: '7d',
    doc: 'Changes every feed has acknowledged are deleted from the change log after this long (`feed replay` reaches back this far).',
    parse: duration(60_000),
  }),
};
