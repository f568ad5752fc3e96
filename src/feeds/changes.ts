import { sql, type Kysely } from 'kysely';
import { numberStagedChanges } from '../store/change-log.js';
import { sqliteHandle } from '../store/connect.js';
import type { Schema } from '../store/types.js';
import { sequenceText, type CloudEvent, type OutgoingEvent } from './events.js';

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

/** The event id of change `seq`: the same on every retry, replay and full sync that carries it. */
export function changeEventId(instance: string, seq: number): string {
  return `${instance}:${seq}`;
}

/** `forgesync://<instance>/<module>/<name>`. */
export function eventSource(instance: string, module: string, name: string): string {
  return `forgesync://${encodeURIComponent(instance)}/${module}/${encodeURIComponent(name)}`;
}

/** The event's data as JSON: as recorded, or for an imported object `{ import, id, number?, action, object }`. */
function eventDataText(change: ChangeRow): string {
  if (!change.object) return change.dataText ?? 'null';
  const number = change.data?.number;
  return (
    `{"import":${JSON.stringify(change.scope)},"id":${JSON.stringify(change.object.id)}` +
    `${typeof number === 'number' ? `,"number":${number}` : ''},"action":${JSON.stringify(change.data?.action ?? 'updated')},"object":${change.object.json ?? 'null'}}`
  );
}

/** Change `change` as the CloudEvent a sink receives (built once per row read: a window read ahead builds its events while the one before it is out). */
export function changeEvent(instance: string, change: ChangeRow): OutgoingEvent {
  if (change.builtFor !== instance) {
    change.built = buildEvent(instance, change);
    change.builtFor = instance;
  }
  return change.built!;
}

/** A change log event as sent: the CloudEvent object is only made (from the body) when something looks at it. */
class LoggedEvent implements OutgoingEvent {
  #event: CloudEvent | undefined;

  constructor(
    readonly id: string,
    readonly key: string,
    readonly body: string,
  ) {}

  get event(): CloudEvent {
    return (this.#event ??= JSON.parse(this.body) as CloudEvent);
  }
}

/**
 * The start of an event's body up to its id's number, per instance, module,
 * type and name: `{"specversion":"1.0","source":…,"type":…,"datacontenttype":…,"id":"<instance>:`.
 * The same few on every event; no key string is built per lookup.
 */
const heads = new Map<string, Map<string, Map<string, Map<string, string>>>>();

function bodyHead(instance: string, module: string, type: string, name: string): string {
  const byName = child(child(child(heads, instance), module), type);
  let head = byName.get(name);
  if (head === undefined) {
    if (byName.size >= 10_000) byName.clear();
    const source = JSON.stringify(eventSource(instance, module, name));
    byName.set(name, (head = `{"specversion":"1.0","source":${source},"type":${JSON.stringify(type)},"datacontenttype":"application/json","id":"${instance}:`));
  }
  return head;
}

/** The map under `key` in `parent`, made when missing. */
function child<V>(parent: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let map = parent.get(key);
  if (!map) parent.set(key, (map = new Map()));
  return map;
}

/** Subjects as JSON (refs and object names repeat from one change to the next). */
const subjectFields = new Map<string, string>();
function subjectJson(subject: string): string {
  let json = subjectFields.get(subject);
  if (json === undefined) {
    if (subjectFields.size >= 10_000) subjectFields.clear();
    subjectFields.set(subject, (json = JSON.stringify(subject)));
  }
  return json;
}

/** The last time written as text: the changes of one transaction share it. */
let lastTime = { ms: Number.NaN, text: '' };
function timeText(ms: number): string {
  if (lastTime.ms !== ms) lastTime = { ms, text: new Date(ms).toISOString() };
  return lastTime.text;
}

/**
 * The structured event, its body written around the stored JSON (`data` is
 * not parsed and serialised again; its attributes come first, `data` last).
 * The instance name is letters, digits, dots and dashes (its setting
 * checks), so the id needs no escaping.
 */
function buildEvent(instance: string, change: ChangeRow): OutgoingEvent {
  const subject = change.subject === null ? '' : `,"subject":${subjectJson(change.subject)}`;
  const body = `${bodyHead(instance, change.module, change.type, change.scope)}${change.seq}","time":"${timeText(change.recordedAt)}"${subject},"sequence":"${sequenceText(change.seq)}","data":${eventDataText(change)}}`;
  return new LoggedEvent(changeEventId(instance, change.seq), change.key, body);
}
