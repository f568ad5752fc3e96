import { sequenceText, type CloudEvent, type OutgoingEvent } from './events.js';
import type { ChangeRow } from './store/changes.js';

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
