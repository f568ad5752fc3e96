import { z } from 'zod';
import type { RegistryState } from '../store/types.js';

/*
 * Request and response schemas of the HTTP API. They validate requests,
 * check responses, and produce `/openapi.json`. The JSON shapes here are a
 * contract (the dashboard and other tools read them): field names are
 * camelCase and stable, times are ISO 8601 strings, fences (64-bit) are
 * decimal strings, URLs are always credential-redacted. serialize.ts turns
 * domain objects into these shapes.
 */

/** Largest fence a backend stores (signed 64-bit). */
const MAX_FENCE = 2n ** 63n - 1n;

const isoTime = z.iso.datetime().describe('ISO 8601 time');
const fenceString = z.string().regex(/^[0-9]+$/).describe('fencing number, as a decimal string (it is 64-bit)');

/** A registry state: `pending | started | synced | failed`. */
export const RegistryStateSchema = z.enum(['pending', 'started', 'synced', 'failed'] satisfies RegistryState[]);

/** `{ error, message }` (plus `issues` for validation failures): every error response. */
export const ErrorSchema = z
  .object({ error: z.string(), message: z.string(), issues: z.array(z.unknown()).optional() });

/** A source with its registry row; a superset of `forgesync status --json`. */
export const SourceSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    url: z.string().describe('upstream URL, credentials redacted'),
    state: RegistryStateSchema,
    enabled: z.boolean(),
    credentialRef: z.string().nullable().describe('reference such as env:NAME; never a secret'),
    intervalMs: z.number().int().nullable().describe('null: the default interval applies'),
    cron: z.string().nullable(),
    retryCount: z.number().int(),
    nextRetryAt: isoTime.nullable(),
    lastAttemptAt: isoTime.nullable(),
    lastSyncedAt: isoTime.nullable(),
    lastFailure: z.string().nullable(),
    lastFailureAt: isoTime.nullable(),
    checksum: z.string().nullable(),
    verificationState: z.enum(['unverified', 'verified', 'mismatch']),
    verifiedAt: isoTime.nullable(),
    missingOnPrimary: z.boolean(),
    mirrorPath: z.string().nullable(),
    requestedSeq: z.number().int(),
    completedSeq: z.number().int(),
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
    error: z.string().nullable(),
    refsChanged: z.number().int().nullable(),
    fence: fenceString.nullable(),
  });
export type AttemptJson = z.output<typeof AttemptSchema>;

/** A live lease holder. */
export const LeaseHolderSchema = z
  .object({
    key: z.string(),
    fence: fenceString,
    owner: z.object({ name: z.string(), pid: z.number().int(), host: z.string(), acquiredAt: isoTime }),
    expiresAt: isoTime,
    expiresInMs: z.number().int().describe('time left by this server\'s clock (0 when lapsing)'),
  });
export type LeaseHolderJson = z.output<typeof LeaseHolderSchema>;

/** Source detail: the source, its lease holder and its last attempts (newest first). */
export const SourceDetailSchema = SourceSchema.extend({
  leaseKey: z.string(),
  lease: LeaseHolderSchema.nullable(),
  attempts: z.array(AttemptSchema),
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
    name: z.string().min(1).max(100).optional().describe('default: from the URL'),
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
export const SourceParamsSchema = z.object({ name: z.string().min(1).max(100) });

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

/** A lease key in the path (URL-encoded by the client). */
export const LeaseParamsSchema = z.object({ key: z.string().min(1).max(255) });

/** `?prefix=` of the lease list. */
export const LeaseListQuerySchema = z.object({ prefix: z.string().max(255).default('') });

/** `GET /api/leases`. */
export const LeaseListSchema = z.object({ items: z.array(LeaseHolderSchema) });

/** Body of `POST /api/leases/:key/release`: with `fence`, only that holder is released. */
export const ReleaseBodySchema = z
  .strictObject({
    fence: z
      .union([
        z
          .string()
          .regex(/^[1-9][0-9]{0,18}$/, 'fence must be a positive integer')
          .refine((value) => !/^[0-9]+$/.test(value) || BigInt(value) <= MAX_FENCE, 'fence must fit in 64 bits'),
        z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
      ])
      .optional()
      .describe('decimal string (any 64-bit fence) or a safe integer'),
  })
  .nullish()
  .describe('optional; no body releases whoever holds the key');

/** Answer to a force release. */
export const ReleaseResultSchema = z.object({ released: z.boolean() });
