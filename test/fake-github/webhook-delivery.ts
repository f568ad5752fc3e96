/**
 * GitHub's side of a repository webhook: a delivery is one JSON body POSTed
 * with GitHub's headers (`X-GitHub-Event`, a fresh `X-GitHub-Delivery` uuid,
 * `X-Hub-Signature-256` and the older `X-Hub-Signature`, HMACs of the exact
 * bytes sent, the hook's id and target, a `GitHub-Hookshot` user agent).
 * Like GitHub, a delivery that fails is recorded, not retried, and never
 * throws at the sender: its status is 0 when nothing answered.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';

/** Where deliveries go: the receiver's URL and the webhook's secret. */
export interface WebhookTarget {
  url: string;
  secret: string;
}

/** One delivery as sent, with the receiver's answer (`status` 0 and the error's message as `body` when it could not be reached). */
export interface SentDelivery {
  id: string;
  event: string;
  action: string | undefined;
  status: number;
  body: unknown;
  /** Epoch ms when the POST began. */
  sentAt: number;
  /** The payload that was sent (parsed form of the signed body). */
  payload: unknown;
}

/** A delivery ready to send: GitHub's headers and the exact body they sign. */
export interface BuiltDelivery {
  id: string;
  headers: Record<string, string>;
  body: string;
}

/** GitHub gives up on a receiver after 10 seconds. */
const TIMEOUT_MS = 10_000;

export function hmacHex(algorithm: 'sha256' | 'sha1', secret: string, body: string | Buffer): string {
  return createHmac(algorithm, secret).update(body).digest('hex');
}

export class WebhookSender {
  /** Every delivery POSTed, in order. */
  readonly sent: SentDelivery[] = [];
  /** The hook's id, as `X-GitHub-Hook-ID` names it. */
  readonly hookId = 400_000_000 + randomBytes(3).readUIntBE(0, 3);
  private readonly agent = `GitHub-Hookshot/${randomBytes(4).toString('hex').slice(0, 7)}`;

  /** `repoId`: read at each delivery, so a transferred repository keeps its id. */
  constructor(private readonly repoId: () => number, readonly target: WebhookTarget | undefined) {}

  /** The headers and body of a delivery of `payload` as `event`, signed with the target's secret (`secret` overrides it). */
  build(event: string, payload: unknown, secret = this.target?.secret): BuiltDelivery {
    if (secret === undefined) throw new Error('FakeUpstream has no webhook target: pass { url, secret } to sign deliveries');
    const body = JSON.stringify(payload);
    const id = randomUUID();
    return {
      id,
      body,
      headers: {
        Accept: '*/*',
        'Content-Type': 'application/json',
        'User-Agent': this.agent,
        'X-GitHub-Delivery': id,
        'X-GitHub-Event': event,
        'X-GitHub-Hook-ID': String(this.hookId),
        'X-GitHub-Hook-Installation-Target-ID': String(this.repoId()),
        'X-GitHub-Hook-Installation-Target-Type': 'repository',
        'X-Hub-Signature': `sha1=${hmacHex('sha1', secret, body)}`,
        'X-Hub-Signature-256': `sha256=${hmacHex('sha256', secret, body)}`,
      },
    };
  }

  /** POSTs one delivery to the target and records it in `sent`. */
  async send(event: string, payload: unknown): Promise<SentDelivery> {
    if (this.target === undefined) throw new Error('FakeUpstream has no webhook target: pass { url, secret } to deliver');
    const built = this.build(event, payload);
    const action = typeof payload === 'object' && payload !== null && typeof (payload as { action?: unknown }).action === 'string' ? (payload as { action: string }).action : undefined;
    const sentAt = Date.now();
    let status = 0;
    let body: unknown;
    try {
      const response = await fetch(this.target.url, { method: 'POST', headers: built.headers, body: built.body, signal: AbortSignal.timeout(TIMEOUT_MS) });
      status = response.status;
      const text = await response.text();
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
    } catch (error) {
      body = error instanceof Error ? error.message : String(error);
    }
    const delivery: SentDelivery = { id: built.id, event, action, status, body, sentAt, payload };
    this.sent.push(delivery);
    return delivery;
  }
}
