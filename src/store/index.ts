/** The registry store: sources, registry rows and sync attempts on SQLite or PostgreSQL. */
export { openDatabase, databaseDialect, type Database, type OpenDatabaseOptions, type StoreDialect } from './database.js';
export { SourceRepository, type CreateSourceInput, type SourcePatch, type SourceFilter } from './sources.js';
export { RegistryRepository, type RequestManyFilter, type RegistryCounts } from './registry.js';
export { ATTEMPTS_KEPT_PER_SOURCE, type AttemptOutcome } from './attempts.js';
export { MAX_FAILURE_LENGTH } from './rows.js';
export { matchKey, fullNameKey } from './match-key.js';
export type { MatchedRequest } from './match-requests.js';
export { WebhookDeliveryRepository, DELIVERY_PRUNE_MARGIN_MS, type DeliveryClaim } from './webhook-deliveries.js';
export * from './errors.js';
export * from './types.js';
