import type { EgressPolicy } from '../../egress/policy.js';
import type { OutgoingEvent } from '../events.js';

/** What became of one event handed to a sink. */
export type DeliveryOutcome =
  | { ok: true }
  | {
      ok: false;
      /** Why, for the feed's status and dead letters (never a secret). */
      error: string;
      /** The sink asked to be left alone this long (HTTP `Retry-After`, 429/503). */
      retryAfterMs?: number;
      /** The sink said it is gone for good (HTTP 410): the feed disables it. */
      gone?: boolean;
    };

/**
 * Where a feed's events go. A sink acknowledges an event only once the
 * receiver has durably taken it (a 2xx answer, a JetStream publish ack, a
 * file fsynced and renamed into place); until then the feed's cursor does
 * not move past it.
 */
export interface FeedSink {
  /** `http`, `nats` or `file`, for logs and metrics. */
  readonly kind: string;
  /**
   * Delivers `events` (at most one per key: the caller keeps per-key order
   * by never handing two events of one key in the same call) and resolves
   * with one outcome per event, in the same order. A sink may send them
   * together (a batch request, pipelined publishes, one file). It never
   * rejects for a delivery failure: that is an outcome. `signal` aborts
   * what is in flight (outcomes then say so).
   */
  deliver(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]>;
  /** Lets go of connections and files; idempotent. */
  close(): Promise<void>;
}

/** What opening a sink needs besides its URL. */
export interface SinkOptions {
  /**
   * The signing secret (HTTP: Standard Webhooks, `whsec_` prefix accepted)
   * or credential (NATS: a token): the feed secret the feed names, already
   * checked to be bound to the sink's host; undefined when the feed names none.
   */
  secret?: string;
  /** Events per request (HTTP) or per fsynced append (file sink); 1 means one POST per event. */
  batch: number;
  /** Per-request timeout in milliseconds. */
  timeoutMs: number;
  /** File sink: the directory it must be inside (FORGESYNC_FEED_FILE_ROOT); a file sink cannot be opened without it. */
  fileRoot?: string;
  /** File sink: the open file is rolled into place and a new one started beyond this many bytes. */
  maxFileBytes?: number;
  /** File sink: the open file is rolled into place this many milliseconds after it was opened. */
  maxFileAgeMs?: number;
  /** Every outbound connection (HTTP and NATS sinks) is checked against it first. */
  policy: EgressPolicy;
}
