import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { CloudEvent } from '../../../src/feeds/events.js';
import type { ReceivedEvent } from './conformance.js';

/** One request as the receiver saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver answers; `hang` never answers. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/**
 * A webhook receiver on 127.0.0.1 (node:http): records every request, takes
 * the events of a 2xx answer, verifies Standard Webhooks signatures when
 * given a verifier (a request failing verification gets 401 and is not taken),
 * and can be told to fail, to hang or to answer as a case wants.
 */
export class WebhookReceiver {
  readonly requests: SeenRequest[] = [];
  readonly accepted: ReceivedEvent[] = [];
  /** Signature verification failures seen (each answered 401). */
  readonly rejectedSignatures: string[] = [];
  failing = false;
  stalled = false;
  /** Decides the answer instead of the default (null: default). */
  answer: ((request: SeenRequest) => Answer | null) | null = null;
  /** Checks each request's signature when set. */
  verifier: Webhook | null = null;
  /** Delay before answering, ms. */
  delayMs = 0;
  /** When set, every answer waits for it (a case holds deliveries until it has seen what it waits for). */
  hold: Promise<void> | null = null;
  inFlight = 0;
  maxInFlight = 0;
  connections = 0;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #hanging = new Set<ServerResponse>();

  private constructor() {
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.on('connection', (socket) => {
      this.connections++;
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Answers nothing more that hangs, forgets the per-case settings. */
  reset(): void {
    this.failing = false;
    this.stalled = false;
    this.answer = null;
    this.delayMs = 0;
    this.hold = null;
    this.maxInFlight = 0;
    this.releaseHanging();
  }

  releaseHanging(): void {
    for (const res of this.#hanging) res.destroy();
    this.#hanging.clear();
  }

  async stop(): Promise<void> {
    this.releaseHanging();
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const seen: SeenRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      this.requests.push(seen);
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      if (this.hold) await this.hold;
      const answer = this.answer?.(seen) ?? this.#defaultAnswer(seen);
      if (answer === 'hang') {
        this.#hanging.add(res);
        return;
      }
      if (answer.status >= 200 && answer.status < 300) this.#take(seen);
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    } finally {
      this.inFlight--;
    }
  }

  #defaultAnswer(seen: SeenRequest): Answer {
    if (this.stalled) return 'hang';
    if (this.failing) return { status: 500, body: 'receiver is down for maintenance' };
    if (this.verifier) {
      try {
        this.verifier.verify(seen.body, seen.headers as Record<string, string>);
      } catch (error) {
        this.rejectedSignatures.push((error as Error).message);
        return { status: 401, body: 'bad signature' };
      }
    }
    return { status: 204 };
  }

  #take(seen: SeenRequest): void {
    const parsed = JSON.parse(seen.body) as CloudEvent | CloudEvent[];
    if (Array.isArray(parsed)) for (const event of parsed) this.accepted.push({ event });
    else this.accepted.push({ event: parsed, raw: seen.body });
  }
}
