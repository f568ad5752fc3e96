/** The fake GitHub (REST v3 + git smart-HTTP + attachment host) for the importer's tests and benchmarks. */
export { FakeGitHub, startFakeGitHub, type Fault, type FakeGitHubOptions, type InjectRule, type LogEntry, type RequestInfo, type Stats } from './server.js';
export { FakeProject } from './project.js';
export type * from './records.js';
export { generateProject, smallProject, prng, defaultProtection, type GenerateOptions } from './generate.js';
export { SchemaChecker, type Schema, type SchemaError } from './schema-check.js';
export { RateLimiter, type RateState } from './limits.js';
export { Payloads, loadExamples, fixturePath, nodeId, type Hosts } from './payloads.js';
export { withHostileLinks, BAD_ESCAPE_PATH, type HostileOptions } from './hostile.js';
export { FakeUpstream, type Act, type Planned, type Sent, type SentDelivery, type WebhookTarget, type BuiltDelivery } from './upstream.js';
export { WebhookPayloads } from './webhook-payloads.js';
export { WebhookSender, hmacHex } from './webhook-delivery.js';
export * as mutations from './mutations.js';
