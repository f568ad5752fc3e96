import { jetstreamManager } from '@nats-io/jetstream';
import { connect, RequestError, type NatsConnection } from '@nats-io/transport-node';
import type { OutgoingEvent } from '../events.js';
import { abortedOutcome, delivered, errorText, failed, outcomeOfError } from './outcomes.js';
import { JetStreamPublisher, type PublishAnswer } from './jetstream-publisher.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from './types.js';
import { NATS_DEFAULT_PORT, natsSubjectOf } from './url.js';

interface Connection {
  nc: NatsConnection;
  publisher: JetStreamPublisher;
}

/**
 * JetStream publishes to the subject of `nats://host[:port]/<subject>`: the
 * message data is the event's structured JSON, its `Nats-Msg-Id` the event
 * id (the stream drops a redelivery within its duplicate window, default
 * 2 minutes). An event is acknowledged once its PubAck arrived (a duplicate
 * ack too: the stream has it). The stream is not created here: its
 * retention, limits and replicas are the operator's decision, and a sink
 * that made one would hide a misnamed subject; a missing stream fails each
 * delivery with a message saying so.
 */
export function createNatsSink(url: URL, options: SinkOptions): FeedSink {
  return new NatsSink(url, options);
}

class NatsSink implements FeedSink {
  readonly kind = 'nats';
  readonly #host: string;
  readonly #port: number;
  readonly #subject: string;
  readonly #options: SinkOptions;
  #connection: Promise<Connection> | undefined;
  #closing: Promise<void> | undefined;

  constructor(url: URL, options: SinkOptions) {
    this.#host = url.hostname;
    this.#port = url.port === '' ? NATS_DEFAULT_PORT : Number(url.port);
    this.#subject = natsSubjectOf(url);
    this.#options = options;
  }

  async deliver(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
    if (events.length === 0) return [];
    if (this.#closing) return events.map(() => failed('the sink is closed'));
    if (signal.aborted) return events.map(() => abortedOutcome(signal));
    const stop = abortion(signal);
    try {
      let connection: Connection;
      try {
        connection = await Promise.race([this.#connect(), stop.promise]);
      } catch (error) {
        return events.map(() => outcomeOfError(error, signal, this.#options.secret));
      }
      // Pipelined: every publish is written before the first ack is awaited.
      const answers = await connection.publisher.publish(this.#subject, events, this.#options.timeoutMs, signal);
      // One look per delivery at why nobody answered, however many publishes it had.
      const unanswered = answers.some((answer) => !answer.ok && answer.reason === 'no-responders') ? failed(await this.#diagnoseNoResponders(connection.nc)) : undefined;
      return answers.map((answer) => (answer.ok ? delivered : answer.reason === 'aborted' ? abortedOutcome(signal) : answer.reason === 'no-responders' ? unanswered! : failed(this.#describe(answer))));
    } finally {
      stop.dispose();
    }
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const connection = await this.#connection?.catch(() => undefined);
      this.#connection = undefined;
      // Drain: publishes already written are flushed before the connection closes.
      if (connection && !connection.nc.isClosed()) await connection.nc.drain().catch(() => connection.nc.close());
    })();
    return this.#closing;
  }

  /** The connection, opened on first use; a failed attempt is not kept (the next delivery tries again). */
  #connect(): Promise<Connection> {
    if (this.#connection) return this.#connection;
    const opening = this.#open();
    this.#connection = opening;
    opening.catch(() => {
      if (this.#connection === opening) this.#connection = undefined;
    });
    return opening;
  }

  async #open(): Promise<Connection> {
    const { policy, timeoutMs, secret } = this.#options;
    // Checked by the egress policy, then connected to the checked addresses only: the client
    // does not resolve again, and ignores the servers a cluster gossips (the policy saw none of
    // them); it reconnects to these addresses by itself when the connection drops.
    const target = await policy.resolve(this.#host, { timeoutMs });
    const servers = target.addresses.map(({ address, family }) => (family === 6 ? `[${address}]:${this.#port}` : `${address}:${this.#port}`));
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers,
        name: 'forgesync',
        timeout: timeoutMs,
        resolve: false,
        ignoreClusterUpdates: true,
        noRandomize: true,
        maxReconnectAttempts: -1,
        // Otherwise every publish builds two errors just for their stack traces (a fifth of the CPU).
        noAsyncTraces: true,
        ...(secret !== undefined ? { token: secret } : {}),
      });
    } catch (error) {
      const refused = /authori[sz]ation/i.test(errorText(error));
      const hint = !refused ? '' : secret === undefined ? ' (the server wants a token: have the operator define it as a feed secret bound to this host and name it with --secret)' : ' (check the token of the feed secret named by --secret)';
      throw new Error(`cannot connect to NATS at ${this.#where()}: ${errorText(error, secret)}${hint}`, { cause: error });
    }
    // A connection closed for good (not one the client is reconnecting) is replaced on the next delivery.
    const connection: Connection = { nc, publisher: new JetStreamPublisher(nc) };
    const opened = this.#connection;
    void nc.closed().then(() => {
      if (this.#connection === opened) this.#connection = undefined;
    });
    return connection;
  }

  #where(): string {
    return `${this.#host.includes(':') ? `[${this.#host}]` : this.#host}:${this.#port}`;
  }

  /** A failed publish's message (no-responders and aborted publishes are told apart before). */
  #describe(answer: Extract<PublishAnswer, { ok: false }>): string {
    const where = `NATS at ${this.#where()}`;
    switch (answer.reason) {
      case 'timeout':
        return `${where} did not acknowledge the publish to "${this.#subject}" within ${this.#options.timeoutMs} ms`;
      case 'refused':
        return `JetStream refused the publish to "${this.#subject}": ${answer.description}${answer.code === undefined ? '' : ` (error ${answer.code})`}`;
      case 'closed':
        return `publishing to "${this.#subject}" failed: the connection to ${where} closed before the acknowledgement`;
      case 'unsubscribed':
        return `publishing to "${this.#subject}" at ${where} failed: the acknowledgements cannot be received (${errorText(answer.description, this.#options.secret)})`;
      default:
        return `publishing to "${this.#subject}" at ${where} failed (${answer.reason})`;
    }
  }

  /** Nobody answered a publish: no stream takes the subject, or JetStream is off; the account info tells which. */
  async #diagnoseNoResponders(nc: NatsConnection): Promise<string> {
    const create = `create one (e.g. \`nats stream add <name> --subjects '${this.#subject}'\`); forgesync does not create streams, their retention and limits are yours to choose`;
    try {
      const jsm = await jetstreamManager(nc, { timeout: this.#options.timeoutMs });
      await jsm.getAccountInfo();
    } catch (error) {
      if (isNoResponders(error) || /not enabled/i.test(errorText(error))) {
        return `JetStream is not enabled on the NATS server at ${this.#where()} (or for this account): start nats-server with -js, then ${create} covering "${this.#subject}"`;
      }
    }
    return `no JetStream stream covers the subject "${this.#subject}" at NATS ${this.#where()}: ${create}`;
  }
}

/** A publish nobody answered: JetStream raises it as "jetstream is not enabled", with a no-responders RequestError as its cause. */
function isNoResponders(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (current instanceof RequestError && current.isNoResponders()) return true;
    if (current.name === 'NoRespondersError') return true;
  }
  return false;
}

/** A promise rejecting with the signal's reason when it aborts (never resolving), and its cleanup. */
function abortion(signal: AbortSignal): { promise: Promise<never>; dispose: () => void } {
  let onAbort = (): void => undefined;
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => undefined);
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}
