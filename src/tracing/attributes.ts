import type { StoreDialect } from '../store/database.js';

/**
 * Span attribute names. The standard ones are OpenTelemetry's semantic
 * conventions (the values of @opentelemetry/semantic-conventions' ATTR_*
 * constants, checked by test/tracing/attributes.test.ts); they are spelled
 * here so that instrumented code never loads that package (its stable entry
 * alone is a few hundred kilobytes) when tracing is off.
 */
export const ATTR = {
  httpRequestMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpResponseStatusCode: 'http.response.status_code',
  urlPath: 'url.path',
  urlScheme: 'url.scheme',
  serverAddress: 'server.address',
  clientAddress: 'client.address',
  errorType: 'error.type',
  messagingSystem: 'messaging.system',
  messagingOperationType: 'messaging.operation.type',
  messagingOperationName: 'messaging.operation.name',
  messagingDestinationName: 'messaging.destination.name',
  messagingMessageId: 'messaging.message.id',
  dbOperationName: 'db.operation.name',
  dbSystemName: 'db.system.name',
  /** forgesync's own: the source (by name) a span works on. */
  source: 'forgesync.source',
  /** forgesync's own: the import (by name). */
  import: 'forgesync.import',
  /** forgesync's own: the feed (by name). */
  feed: 'forgesync.feed',
  /** forgesync's own: a sync's trigger, an import's stage, a webhook's provider, a job's key. */
  syncTrigger: 'forgesync.sync.trigger',
  syncOutcome: 'forgesync.sync.outcome',
  importStage: 'forgesync.import.stage',
  webhookProvider: 'forgesync.webhook.provider',
  webhookResult: 'forgesync.webhook.result',
  jobKey: 'forgesync.job.key',
  feedEvents: 'forgesync.feed.events',
} as const;

/** `db.system.name` of each registry database (the semantic conventions' values). */
export const DB_SYSTEM_NAME: Record<StoreDialect, string> = { sqlite: 'sqlite', postgres: 'postgresql' };
