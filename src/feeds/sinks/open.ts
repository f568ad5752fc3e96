import { InvalidSinkOptionError } from './errors.js';
import type { FeedSink, SinkOptions } from './types.js';
import { validateSinkUrl, type SinkScheme } from './url.js';

export { redactSinkUrl, validateSinkUrl } from './url.js';

/** Opens a sink of one kind on a URL validateSinkUrl accepted; connects lazily, on the first delivery. */
export type SinkFactory = (url: URL, options: SinkOptions) => FeedSink;

// Drivers are imported only when their scheme is used, so a deployment
// without NATS feeds never loads the NATS client.
const DRIVERS: Record<SinkScheme, () => Promise<SinkFactory>> = {
  http: async () => (await import('./http.js')).createHttpSink,
  https: async () => (await import('./http.js')).createHttpSink,
  nats: async () => (await import('./nats.js')).createNatsSink,
  file: async () => (await import('./file.js')).createFileSink,
};

/**
 * Opens the sink `url` names: `http(s)://…` (webhook POSTs, Standard
 * Webhooks signatures), `nats://host[:port]/<subject>` (JetStream publishes)
 * or `file:///<dir>` (NDJSON files, inside `options.fileRoot`). Nothing is connected or written until
 * the first delivery, so opening never fails for an unreachable receiver.
 * @throws UnsupportedSinkUrlError for a URL validateSinkUrl refuses (FileSinkOutsideRootError for a file sink outside the root);
 *   InvalidSinkOptionError, InvalidSinkSecretError for unusable options.
 */
export async function openSink(url: string, options: SinkOptions): Promise<FeedSink> {
  const parsed = validateSinkUrl(url);
  checkOptions(options);
  const scheme = parsed.protocol.slice(0, -1) as SinkScheme;
  const create = await DRIVERS[scheme]();
  return create(parsed, options);
}

function checkOptions(options: SinkOptions): void {
  const { batch, timeoutMs, maxFileBytes, maxFileAgeMs } = options ?? ({} as SinkOptions);
  if (!Number.isSafeInteger(batch) || batch < 1) throw new InvalidSinkOptionError(`a sink's batch size must be a whole number of at least 1, not ${String(batch).slice(0, 20)}`);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new InvalidSinkOptionError(`a sink's timeout must be a positive number of milliseconds, not ${String(timeoutMs).slice(0, 20)}`);
  if (maxFileBytes !== undefined && (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 1)) {
    throw new InvalidSinkOptionError(`a file sink's maxFileBytes must be a whole number of at least 1, not ${String(maxFileBytes).slice(0, 20)}`);
  }
  if (maxFileAgeMs !== undefined && (!Number.isSafeInteger(maxFileAgeMs) || maxFileAgeMs < 1)) {
    throw new InvalidSinkOptionError(`a file sink's maxFileAgeMs must be a whole number of at least 1, not ${String(maxFileAgeMs).slice(0, 20)}`);
  }
  if (!options.policy) throw new InvalidSinkOptionError('a sink needs the egress policy its connections are checked against');
}
