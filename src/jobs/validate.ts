import { shown } from '../util/shown.js';
import { InvalidJobError } from './errors.js';
import type { Job, JobKind } from './types.js';

// Kinds and keys end up in queue names and job ids: printable, no separators that
// BullMQ or Redis treat specially (":" is fine inside a key, it is joined after the kind).
const KIND = /^[a-z][a-z0-9-]{0,39}$/;
const KEY = /^[\x21-\x7e]{1,200}$/;
// A shard id (cluster/settings.ts SHARD_ID): it is joined to the kind in a queue name.
const SHARD = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** A job kind's name: it becomes a queue name on a shared transport. */
export function validateKindName(kind: string): void {
  if (!KIND.test(kind)) throw new InvalidJobError(`job kind ${JSON.stringify(kind)} must be 1-40 of a-z, 0-9 and "-", starting with a letter`);
}

export function validateJobKind(kind: string, spec: JobKind): void {
  validateKindName(kind);
  if (!Number.isInteger(spec.concurrency) || spec.concurrency < 1 || spec.concurrency > 1000) {
    throw new InvalidJobError(`concurrency of job kind "${kind}" must be an integer from 1 to 1000, got ${spec.concurrency}`);
  }
}

export function validateJob(job: Job): void {
  if (job === null || typeof job !== 'object') throw new InvalidJobError('a job must be an object { kind, key, payload?, fairness?, shard? }');
  if (typeof job.kind !== 'string' || !KIND.test(job.kind)) throw new InvalidJobError(`job kind ${shown(job.kind)} must be 1-40 of a-z, 0-9 and "-"`);
  if (typeof job.key !== 'string' || !KEY.test(job.key)) throw new InvalidJobError(`job key ${shown(job.key)} must be 1-200 printable ASCII characters without spaces`);
  if (job.fairness !== undefined && (typeof job.fairness !== 'string' || job.fairness.length > 255)) {
    throw new InvalidJobError('job fairness bucket must be a string of at most 255 characters');
  }
  if (job.shard !== undefined && (typeof job.shard !== 'string' || !SHARD.test(job.shard))) {
    throw new InvalidJobError(`job shard ${shown(job.shard)} must be 1-63 of a-z, 0-9, "_" and "-", starting with a letter or digit`);
  }
  if (job.payload !== undefined) {
    if (job.payload === null || typeof job.payload !== 'object' || Array.isArray(job.payload)) {
      throw new InvalidJobError('job payload must be an object of strings, numbers, booleans and nulls');
    }
    for (const name in job.payload) {
      const value = job.payload[name];
      const type = typeof value;
      if (value !== null && type !== 'string' && type !== 'number' && type !== 'boolean') {
        throw new InvalidJobError(`job payload field "${name}" must be a string, number, boolean or null`);
      }
    }
  }
}
