/**
 * A change as delivered: a CloudEvents 1.0 event in structured JSON mode
 * (https://github.com/cloudevents/spec, `application/cloudevents+json`),
 * with the `sequence` extension carrying the change log's sequence number.
 */
export interface CloudEvent {
  specversion: '1.0';
  /** Stable for one change: the same on every retry, replay and full sync that carries it. */
  id: string;
  /** `forgesync://<instance>/<module>/<name>`, e.g. `forgesync://build-1/replication/linux`. */
  source: string;
  /** `dev.forgesync.ref.updated`, `dev.forgesync.source.state`, `dev.forgesync.import.issue`, … */
  type: string;
  /** What in the source the event is about: a ref name, `issue/12`, … */
  subject?: string;
  /** When the change was recorded (RFC 3339). */
  time: string;
  datacontenttype: 'application/json';
  data: unknown;
  /** The change log's sequence number, as a decimal string zero-padded to 20 digits so that it also sorts as text. */
  sequence: string;
}

/** An event on its way to a sink, with the key whose changes must arrive in order. */
export interface OutgoingEvent {
  /** The event's id (a sink's deduplication id: `webhook-id`, `Nats-Msg-Id`). */
  readonly id: string;
  readonly event: CloudEvent;
  /** Per-key order: the source and ref, the source alone (state), or the import and object id. */
  readonly key: string;
  /** The event serialised once (structured JSON), as every sink sends it. */
  readonly body: string;
}

/** The `sequence` attribute of change number `seq`. */
export function sequenceText(seq: number | bigint): string {
  return String(seq).padStart(20, '0');
}

/** Builds an outgoing event, serialising it once. */
export function outgoing(event: CloudEvent, key: string): OutgoingEvent {
  return { id: event.id, event, key, body: JSON.stringify(event) };
}
