/** The registry store: sources, registry rows and sync attempts on SQLite or PostgreSQL. */
export { openDatabase, databaseDialect, type Database, type OpenDatabaseOptions, type StoreDialect } from './database.js';
export { SourceRepository, type CreateSourceInput, type SourcePatch, type SourceFilter } from '../replication/store/sources.js';
export { RegistryRepository, type RequestManyFilter, type RegistryCounts } from '../replication/store/registry.js';
export { ATTEMPTS_KEPT_PER_SOURCE, type AttemptOutcome } from '../replication/store/attempts.js';
export { MAX_FAILURE_LENGTH } from '../replication/store/rows.js';
export { matchKey, fullNameKey } from '../replication/store/match-key.js';
export type { MatchedRequest } from '../replication/store/match-requests.js';
export { WebhookDeliveryRepository, DELIVERY_PRUNE_MARGIN_MS, type DeliveryClaim } from '../replication/store/webhook-deliveries.js';
export * from './errors.js';
export * from './types.js';
