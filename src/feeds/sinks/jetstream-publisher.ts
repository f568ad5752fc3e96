import { createInbox, headers, type Msg, type NatsConnection } from '@nats-io/transport-node';

/** What became of one publish. */
export type PublishAnswer =
  | { ok: true }
  | { ok: false; reason: 'timeout' | 'no-responders' | 'closed' | 'aborted' }
  | { ok: false; reason: 'refused'; description: string; code: number | undefined }
  | { ok: false; reason: 'unsubscribed'; description: string };

/** A message to publish: its body and its `Nats-Msg-Id`. */
export interface Publication {
  readonly body: string;
  readonly id: string;
}

const decoder = new TextDecoder();

/**
 * JetStream publishes on one NATS connection, every acknowledgement (the
 * stream's PubAck, or its refusal) coming back on one reply subscription
 * of the publisher's own. The wire exchange is the one `js.publish` makes:
 * the message with its `Nats-Msg-Id` header and a reply subject, answered
 * by `{"stream":…,"seq":…}` or `{"error":{…}}`, or by a no-responders status
 * when no stream takes the subject. Why not `js.publish`: it makes a full
 * request per message (a promise, a timer, an entry in the connection's
 * request map, and an Error object built for its stack trace even when the
 * ack arrives), a quarter of a feed's CPU. Here a batch shares one timer
 * and one promise, and a publish costs a map entry.
 */
export class JetStreamPublisher {
  readonly #inbox: string;
  /** Waiters for the acks of messages published, by reply token. */
  readonly #waiting = new Map<string, (answer: PublishAnswer) => void>();
  #next = 0;
  #closed = false;
  /** Why the reply subscription ended (e.g. no permission for the inbox): every publish fails with it. */
  #unsubscribed: string | undefined;

  /** `nc` is connected with the default inbox prefix (`_INBOX`): the reply subjects are under it. */
  constructor(private readonly nc: NatsConnection) {
    this.#inbox = `${createInbox()}.`;
    // The subscription lives as long as the connection (the client renews it on every reconnect).
    nc.subscribe(`${this.#inbox}*`, {
      callback: (error, msg) => {
        if (!error) return this.#answer(msg);
        this.#unsubscribed = error.message;
        this.#failAll({ ok: false, reason: 'unsubscribed', description: error.message });
      },
    });
    void nc.closed().then(() => {
      this.#closed = true;
      this.#failAll({ ok: false, reason: 'closed' });
    });
  }

  /**
   * Publishes every message to `subject` (all written before any ack is
   * awaited) and resolves with one answer per message, in order, once each
   * has its ack, `timeoutMs` has passed (the rest time out) or `signal`
   * aborted (the rest are aborted: unacknowledged, perhaps stored).
   */
  publish(subject: string, messages: readonly Publication[], timeoutMs: number, signal: AbortSignal): Promise<PublishAnswer[]> {
    const answers: (PublishAnswer | undefined)[] = new Array(messages.length);
    if (this.#closed) return Promise.resolve(answers.fill({ ok: false, reason: 'closed' }) as PublishAnswer[]);
    if (this.#unsubscribed !== undefined) return Promise.resolve(answers.fill({ ok: false, reason: 'unsubscribed', description: this.#unsubscribed }) as PublishAnswer[]);
    return new Promise((resolve) => {
      let left = messages.length;
      const tokens: string[] = new Array(messages.length);
      const settle = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(answers as PublishAnswer[]);
      };
      const giveUp = (reason: 'timeout' | 'aborted'): void => {
        for (let index = 0; index < messages.length; index++) {
          if (answers[index] !== undefined) continue;
          this.#waiting.delete(tokens[index]!);
          answers[index] = { ok: false, reason };
        }
        settle();
      };
      const onAbort = (): void => giveUp('aborted');
      const timer = setTimeout(() => giveUp('timeout'), timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      for (let index = 0; index < messages.length; index++) {
        const message = messages[index]!;
        const token = (this.#next++).toString(36);
        tokens[index] = token;
        this.#waiting.set(token, (answer) => {
          answers[index] = answer;
          if (--left === 0) settle();
        });
        const header = headers();
        header.set('Nats-Msg-Id', message.id);
        try {
          this.nc.publish(subject, message.body, { reply: this.#inbox + token, headers: header });
        } catch {
          // The connection is closed or draining: this message and the rest are not sent.
          for (let rest = index; rest < messages.length; rest++) {
            this.#waiting.delete(tokens[rest] ?? '');
            answers[rest] = { ok: false, reason: 'closed' };
          }
          left -= messages.length - index;
          if (left === 0) settle();
          return;
        }
      }
    });
  }

  #answer(msg: Msg): void {
    const token = msg.subject.slice(this.#inbox.length);
    const waiter = this.#waiting.get(token);
    if (!waiter) return; // Late (timed out or aborted already).
    this.#waiting.delete(token);
    waiter(pubAck(msg));
  }

  #failAll(answer: PublishAnswer): void {
    const waiters = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const waiter of waiters) waiter(answer);
  }
}

/** The answer a PubAck message carries. */
function pubAck(msg: Msg): PublishAnswer {
  if (msg.data.length === 0 && msg.headers?.code === 503) return { ok: false, reason: 'no-responders' };
  let ack: { stream?: unknown; error?: { description?: unknown; err_code?: unknown } };
  try {
    ack = JSON.parse(decoder.decode(msg.data)) as typeof ack;
  } catch {
    return { ok: false, reason: 'refused', description: `an answer that is not a PubAck (${decoder.decode(msg.data.subarray(0, 200))})`, code: undefined };
  }
  if (ack.error) {
    return { ok: false, reason: 'refused', description: String(ack.error.description ?? 'no description'), code: typeof ack.error.err_code === 'number' ? ack.error.err_code : undefined };
  }
  if (typeof ack.stream !== 'string' || ack.stream === '') return { ok: false, reason: 'refused', description: 'a PubAck naming no stream', code: undefined };
  return { ok: true };
}
