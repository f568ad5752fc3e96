import { sql, type Kysely } from 'kysely';
import type { Schema } from '../store/types.js';
import { outgoing, sequenceText, type OutgoingEvent } from './events.js';

/** A change log row as a feed reads it, the imported object joined in. */
export interface ChangeRow {
  seq: number;
  type: string;
  module: string;
  scope: string;
  key: string;
  subject: string | null;
  /** Parsed `data`; for an imported object `{ action, number }`. */
  data: Record<string, unknown> | null;
  /** An imported object's row as stored now (undefined for other changes; null when it was deleted since). */
  object?: { id: string; json: string | null };
  recordedAt: number;
}

interface RawChange {
  seq: number | string;
  type: string;
  module: string;
  scope: string;
  change_key: string;
  subject: string | null;
  data: string | null;
  object_key: string | null;
  object_data: string | null;
  recorded_at: number | string;
}

function select(db: Kysely<Schema>) {
  return db
    .selectFrom('change_log as c')
    .leftJoin('import_objects as o', (join) => join.onRef('o.import_id', '=', 'c.import_id').onRef('o.type', '=', 'c.object_type').onRef('o.key', '=', 'c.object_key'))
    .select(['c.seq', 'c.type', 'c.module', 'c.scope', 'c.change_key', 'c.subject', 'c.data', 'c.object_key', 'o.data as object_data', 'c.recorded_at']);
}

function toRow(raw: RawChange): ChangeRow {
  return {
    seq: Number(raw.seq),
    type: raw.type,
    module: raw.module,
    scope: raw.scope,
    key: raw.change_key,
    subject: raw.subject,
    data: raw.data === null ? null : (JSON.parse(raw.data) as Record<string, unknown>),
    ...(raw.object_key !== null ? { object: { id: raw.object_key, json: raw.object_data } } : {}),
    recordedAt: Number(raw.recorded_at),
  };
}

/**
 * Up to `limit` changes after `afterSeq`, in order: one range scan of the
 * primary key, whatever the log's length. Numbers follow commit order (see
 * migration 007), so nothing below the last one read can still appear.
 */
export async function changesAfter(db: Kysely<Schema>, afterSeq: number, limit: number): Promise<ChangeRow[]> {
  const rows = await select(db).where('c.seq', '>', afterSeq).orderBy('c.seq').limit(limit).execute();
  return rows.map((row) => toRow(row as RawChange));
}

/** The changes numbered `seqs` (held-back ones), in order; a number no longer in the log is left out. */
export async function changesNumbered(db: Kysely<Schema>, seqs: readonly number[]): Promise<ChangeRow[]> {
  if (seqs.length === 0) return [];
  const rows = await select(db).where('c.seq', 'in', [...seqs]).orderBy('c.seq').execute();
  return rows.map((row) => toRow(row as RawChange));
}

/** The latest change of each key in `keys` (a full sync gives an exported state the id of the change that made it). */
export async function latestChanges(db: Kysely<Schema>, keys: readonly string[]): Promise<Map<string, ChangeRow>> {
  const found = new Map<string, ChangeRow>();
  for (let start = 0; start < keys.length; start += 500) {
    const chunk = keys.slice(start, start + 500);
    const rows = await select(db)
      .where('c.seq', 'in', (eb) => eb.selectFrom('change_log').select(sql<number>`max(seq)`.as('seq')).where('change_key', 'in', chunk).groupBy('change_key'))
      .execute();
    for (const row of rows) found.set(row.change_key, toRow(row as RawChange));
  }
  return found;
}

/** The event id of change `seq`: the same on every retry, replay and full sync that carries it. */
export function changeEventId(instance: string, seq: number): string {
  return `${instance}:${seq}`;
}

/** `forgesync://<instance>/<module>/<name>`. */
export function eventSource(instance: string, module: string, name: string): string {
  return `forgesync://${encodeURIComponent(instance)}/${module}/${encodeURIComponent(name)}`;
}

/** The event's data: as recorded, or for an imported object `{ import, id, number?, action, object }`. */
function eventData(change: ChangeRow): unknown {
  if (!change.object) return change.data;
  const number = change.data?.number;
  return {
    import: change.scope,
    id: change.object.id,
    ...(typeof number === 'number' ? { number } : {}),
    action: change.data?.action ?? 'updated',
    object: change.object.json === null ? null : (JSON.parse(change.object.json) as unknown),
  };
}

/** Change `change` as the CloudEvent a sink receives. */
export function changeEvent(instance: string, change: ChangeRow): OutgoingEvent {
  return outgoing(
    {
      specversion: '1.0',
      id: changeEventId(instance, change.seq),
      source: eventSource(instance, change.module, change.scope),
      type: change.type,
      ...(change.subject !== null ? { subject: change.subject } : {}),
      time: new Date(change.recordedAt).toISOString(),
      datacontenttype: 'application/json',
      data: eventData(change),
      sequence: sequenceText(change.seq),
    },
    change.key,
  );
}
