import { z } from 'zod';
import { fenceString, isoTime, LeaseHolderSchema } from '../../server/schemas.js';
import type { RegistryState } from '../../store/types.js';

/*
 * Request and response schemas of the sources API (see server/schemas.ts for
 * the conventions: camelCase, ISO times, fences as decimal strings, URLs
 * always credential-redacted). serialize.ts turns domain objects into these.
 */

/** A registry state: `pending | started | synced | failed`. */
export const RegistryStateSchema = z.enum(['pending', 'started', 'synced', 'failed'] satisfies RegistryState[]);

/**
 * A source with its registry row; a superset of `forgesync status --json`, except
 * that no field names a directory of the server (`mirrorPath` is relative, failures
 * show placeholders such as `<mirrors>`).
 */
export const SourceSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    url: z.string().describe('upstream URL, credentials redacted'),
    state: RegistryStateSchema,
    enabled: z.boolean(),
    credentialRef: z.string().nullable().describe('name of a credential the operator defined, bound to the URL\'s host; never a secret'),
    intervalMs: z.number().int().nullable().describe('null: the default interval applies'),
    cron: z.string().nullable(),
    retryCount: z.number().int(),
    nextRetryAt: isoTime.nullable(),
    lastAttemptAt: isoTime.nullable(),
    lastSyncedAt: isoTime.nullable(),
    lastFailure: z.string().nullable().describe('why the last sync failed; directories of the server appear as placeholders (`<dataDir>`, `<mirrors>`, `<tmp>`…)'),
    lastFailureAt: isoTime.nullable(),
    checksum: z.string().nullable(),
    verificationState: z.enum(['unverified', 'verified', 'mismatch']),
    verifiedAt: isoTime.nullable(),
    missingOnPrimary: z.boolean(),
    mirrorPath: z.string().nullable().describe('the mirror\'s path relative to the mirrors directory of its shard (its directory name, e.g. `12-api-3f2a9c1b7d4e.git`); null before the first sync'),
    requestedSeq: z.number().int(),
    completedSeq: z.number().int(),
    shard: z.string().nullable().describe('The storage shard holding the mirror; null until placed.'),
    fence: fenceString.nullable().describe('fence of the last lease holder that wrote the row'),
    createdAt: isoTime,
    updatedAt: isoTime,
  });
export type SourceJson = z.output<typeof SourceSchema>;

/** One sync attempt. */
export const AttemptSchema = z
  .object({
    id: z.number().int(),
    trigger: z.string(),
    startedAt: isoTime,
    finishedAt: isoTime.nullable(),
    durationMs: z.number().int().nullable(),
    result: z.enum(['synced', 'noop', 'failed', 'missing', 'skipped']).nullable().describe('null while running'),
    error: z.string().nullable().describe('why it failed; directories of the server appear as placeholders (`<mirrors>`…)'),
    refsChanged: z.number().int().nullable(),
    fence: fenceString.nullable(),
  });
export type AttemptJson = z.output<typeof AttemptSchema>;

/** What housekeeping last found and did on a source's mirror (as in `status --json`): every field null before its first look. */
export const HousekeepingSchema = z.object({
  lastRunAt: z.string().nullable().describe('when housekeeping last ran a task on the mirror (ISO 8601); null: never'),
  packs: z.number().int().nullable(),
  looseObjects: z.number().int().nullable(),
  looseRefs: z.number().int().nullable(),
  lastTasks: z.array(z.string()).nullable().describe('tasks of the last run: full-repack, geometric-repack, pack-refs, commit-graph'),
});

/** Source detail: the source, its lease holder, its last attempts (newest first) and its mirror's housekeeping. */
export const SourceDetailSchema = SourceSchema.extend({
  leaseKey: z.string(),
  lease: LeaseHolderSchema.nullable(),
  attempts: z.array(AttemptSchema),
  housekeeping: HousekeepingSchema,
});
export type SourceDetailJson = z.output<typeof SourceDetailSchema>;

/** A page of sources. */
export const SourceListSchema = z.object({
  items: z.array(SourceSchema),
  total: z.number().int().describe('rows matching the filter, ignoring limit/offset'),
  limit: z.number().int(),
  offset: z.number().int(),
});
export type SourceListJson = z.output<typeof SourceListSchema>;

/** `?state=&search=&limit=&offset=` of the source list. */
export const SourceListQuerySchema = z.object({
  state: RegistryStateSchema.optional(),
  search: z.string().max(200).optional().describe('case-insensitive substring of the name or URL'),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

const schedule = {
  interval: z.string().min(1).max(20).optional().describe('e.g. 30m, 1h (instead of cron)'),
  cron: z.string().min(1).max(200).optional().describe('cron expression (instead of interval)'),
};

function oneSchedule(value: { interval?: string | undefined; cron?: string | undefined }, ctx: z.core.$RefinementCtx): void {
  if (value.interval !== undefined && value.cron !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['cron'], message: 'give either interval or cron, not both' });
  }
}

/** Body of `POST /api/sources`. */
export const CreateSourceBodySchema = z
  .strictObject({
    url: z.string().min(1).max(2000).describe('upstream URL (https, ssh; others only when configured)'),
    name: z.string().min(1).max(200).optional().describe('default: from the URL; segments separated by / (team-a/api) are fine'),
    ...schedule,
    credentialRef: z.string().min(1).max(300).optional(),
  })
  .superRefine(oneSchedule);

/** Body of `PATCH /api/sources/:name`; at least one field. `credentialRef: null` clears it. */
export const UpdateSourceBodySchema = z
  .strictObject({
    url: z.string().min(1).max(2000).optional(),
    ...schedule,
    credentialRef: z.string().max(300).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .superRefine(oneSchedule)
  .refine((value) => Object.values(value).some((field) => field !== undefined), { message: 'give at least one field to change' });

/** `:name` of a source. */
export const SourceParamsSchema = z.object({ name: z.string().min(1).max(200).describe('a name with / is sent percent-encoded (team-a%2Fapi)') });

/** `?attempts=` of the source detail. */
export const SourceDetailQuerySchema = z.object({ attempts: z.coerce.number().int().min(0).max(100).default(20) });

/** `202` answer to a sync/resync request of one source. */
export const SyncRequestedSchema = z.object({ name: z.string(), requested: z.number().int().describe('sequence number of the recorded request') });

/** Body of `POST /api/resync`. */
export const BulkResyncBodySchema = z.strictObject({
  filter: z.union([z.literal('failed'), z.literal('all'), z.strictObject({ state: RegistryStateSchema })], {
    error: 'filter must be "failed", "all" or { "state": "pending" | "started" | "synced" | "failed" }',
  }),
  dryRun: z.boolean().default(false).describe('only count the rows the filter selects; record nothing'),
});

/** Answer to `POST /api/resync`. */
export const BulkResyncResultSchema = z.object({ affected: z.number().int(), dryRun: z.boolean() });

/** `GET /api/overview`: what the dashboard's front page shows. */
export const OverviewSchema = z.object({
  counts: z.object({
    pending: z.number().int(),
    started: z.number().int(),
    synced: z.number().int(),
    failed: z.number().int(),
    verified: z.number().int(),
    mismatch: z.number().int(),
    missing: z.number().int(),
    total: z.number().int(),
  }),
  scheduler: z.object({ state: z.enum(['stopped', 'standby', 'active']) }),
  capacity: z.object({ running: z.number().int(), queued: z.number().int(), capacity: z.number().int() }),
});
export type OverviewJson = z.output<typeof OverviewSchema>;

