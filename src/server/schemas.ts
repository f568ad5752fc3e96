import { z } from 'zod';

/*
 * Request and response schemas shared by the HTTP API's routes (errors,
 * leases); each module keeps its own beside its routes. They validate
 * requests, check responses, and produce `/openapi.json`. The JSON shapes here are a
 * contract (the dashboard and other tools read them): field names are
 * camelCase and stable, times are ISO 8601 strings, fences (64-bit) are
 * decimal strings, URLs are always credential-redacted. serialize.ts turns
 * domain objects into these shapes.
 */

/** Largest fence a backend stores (signed 64-bit). */
const MAX_FENCE = 2n ** 63n - 1n;

export const isoTime = z.iso.datetime().describe('ISO 8601 time');
export const fenceString = z.string().regex(/^[0-9]+$/).describe('fencing number, as a decimal string (it is 64-bit)');

/** `{ error, message }` (plus `issues` for validation failures): every error response. */
export const ErrorSchema = z
  .object({ error: z.string(), message: z.string(), issues: z.array(z.unknown()).optional() });

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
