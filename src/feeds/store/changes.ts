/**
 * Reading the change log as feeds do (the writer side, numbering included,
 * is store/change-log.ts). Inputs: a position in the log (`afterSeq`), the
 * numbers of held-back changes, or change keys. Returns ChangeRows, the
 * imported object a row points at read along. Nothing is written here but
 * the numbering of staged changes changesAfter asks for first.
 */
import { sql, type Kysely } from 'kysely';
import { numberStagedChanges } from '../../store/change-log.js';
import { sqliteHandle } from '../../store/connect.js';
import type { Schema } from '../../store/types.js';
import type { OutgoingEvent } from '../events.js';

/** What a ChangeRow is made of (see the fields of the same names). */
export interface ChangeRowFields {
  seq: number;
  type: string;
  module: string;
  scope: string;
  key: string;
  subject: string | null;
  dataText: string | null;
  recordedAt: number;
  object?: { id: string; json: string | null } | undefined;
}

/** A change log row as a feed reads it, the imported object it points at read along. */
export class ChangeRow {
  private parsed: Record<string, unknown> | null | undefined;
  /** The event built from it (see changeEvent), and for which instance. */
  built: OutgoingEvent | undefined;
  builtFor: string | undefined;

  readonly seq: number;
  readonly type: string;
  readonly module: string;
  readonly scope: string;
  readonly key: string;
  readonly subject: string | null;
  /** `data` as stored (JSON): sent as it is, parsed only when looked into. */
  readonly dataText: string | null;
  readonly recordedAt: number;
  /** An imported object's row as stored now (undefined for other changes; `json` null when it was deleted since). */
  readonly object: { id: string; json: string | null } | undefined;

  constructor(fields: ChangeRowFields) {
    this.seq = fields.seq;
    this.type = fields.type;
    this.module = fields.module;
    this.scope = fields.scope;
    this.key = fields.key;
    this.subject = fields.subject;
    this.dataText = fields.dataText;
    this.recordedAt = fields.recordedAt;
    this.object = fields.object;
  }

  /** The parsed `data`; for an imported object `{ action, number }`. */
  get data(): Record<string, unknown> | null {
    if (this.parsed === undefined) this.parsed = this.dataText === null ? null : (JSON.parse(this.dataText) as Record<string, unknown>);
    return this.parsed;
  }
}

/** A change_log row as its COLUMNS, in order. */
type RawChange = [
  seq: number | string,
  type: string,
  module: string,
  scope: string,
  key: string,
  subject: string | null,
  data: string | null,
  importId: number | string | null,
  objectType: string | null,
  objectKey: string | null,
  recordedAt: number | string,
];

const COLUMNS = ['seq', 'type', 'module', 'scope', 'change_key', 'subject', 'data', 'import_id', 'object_type', 'object_key', 'recorded_at'] as const;

/** Rows as Kysely returns them, as RawChanges. */
const tuples = (rows: readonly Record<(typeof COLUMNS)[number], unknown>[]): RawChange[] => rows.map((row) => COLUMNS.map((column) => row[column]) as RawChange);

/**
 * The rows as ChangeRows, with the imported objects they point at read in
 * one query per (import, type) rather than joined to every row: most
 * changes are refs and states.
 */
async function toRows(db: Kysely<Schema>, raws: readonly RawChange[]): Promise<ChangeRow[]> {
  const wanted = new Map<string, { importId: number; type: string; keys: Set<string> }>();
  for (const [, , , , , , , importId, objectType, objectKey] of raws) {
    if (objectKey === null || importId === null || objectType === null) continue;
    const group = `${importId} ${objectType}`;
    const entry = wanted.get(group) ?? { importId: Number(importId), type: objectType, keys: new Set<string>() };
    entry.keys.add(objectKey);
    wanted.set(group, entry);
  }
  const objects = new Map<string, string>();
  for (const [group, { importId, type, keys }] of wanted) {
    const rows = await db.selectFrom('import_objects').select(['key', 'data']).where('import_id', '=', importId).where('type', '=', type).where('key', 'in', [...keys]).execute();
    for (const row of rows) objects.set(`${group} ${row.key}`, row.data);
  }
  return raws.map(([seq, type, module, scope, key, subject, data, importId, objectType, objectKey, recordedAt]) => {
    const object = objectKey === null ? undefined : { id: objectKey, json: objects.get(`${importId} ${objectType} ${objectKey}`) ?? null };
    return new ChangeRow({ seq: Number(seq), type, module, scope, key, subject, dataText: data, recordedAt: Number(recordedAt), object });
  });
}

/**
 * Up to `limit` changes after `afterSeq`, in order: one range scan of the
 * primary key, whatever the log's length, after numbering what writers
 * staged (store/change-log.ts, "Numbering"). Numbers follow commit order,
 * so nothing below the last one read can still appear. On
 * a SQLite file the read runs off the event loop (store/sqlite-reader.ts),
 * unless this connection is inside a transaction (it would not see that
 * transaction's rows).
 */
export async function changesAfter(db: Kysely<Schema>, afterSeq: number, limit: number): Promise<ChangeRow[]> {
  await numberStagedChanges(db);
  const query = db.selectFrom('change_log').select(COLUMNS).where('seq', '>', afterSeq).orderBy('seq').limit(limit);
  const sqlite = sqliteHandle(db);
  if (sqlite?.reader && !sqlite.raw.inTransaction) return toRows(db, (await sqlite.reader.rows(query.compile())) as RawChange[]);
  return toRows(db, tuples(await query.execute()));
}

/** Gets changesAfter's off-thread reader going (see there) before the first delivery needs it. */
export function warmChangeReads(db: Kysely<Schema>): void {
  sqliteHandle(db)?.reader?.warm();
}

/** The changes numbered `seqs` (held-back ones), in order; a number no longer in the log is left out. */
export async function changesNumbered(db: Kysely<Schema>, seqs: readonly number[]): Promise<ChangeRow[]> {
  if (seqs.length === 0) return [];
  return toRows(db, tuples(await db.selectFrom('change_log').select(COLUMNS).where('seq', 'in', [...seqs]).orderBy('seq').execute()));
}

/** The latest change of each key in `keys` (a full sync gives an exported state the id of the change that made it). */
export async function latestChanges(db: Kysely<Schema>, keys: readonly string[]): Promise<Map<string, ChangeRow>> {
  const found = new Map<string, ChangeRow>();
  for (let start = 0; start < keys.length; start += 500) {
    const chunk = keys.slice(start, start + 500);
    const rows = await db
      .selectFrom('change_log')
      .select(COLUMNS)
      .where('seq', 'in', (eb) => eb.selectFrom('change_log').select(sql<number>`max(seq)`.as('seq')).where('change_key', 'in', chunk).groupBy('change_key'))
      .execute();
    for (const row of await toRows(db, tuples(rows))) found.set(row.key, row);
  }
  return found;
}
