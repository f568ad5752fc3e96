import type { BoundToken } from '../../credentials/store.js';
import type { BodyMeter } from '../../egress/body.js';
import type { EgressPolicy } from '../../egress/policy.js';
import type { Links } from './link.js';
import type { TokenBudgets } from './pacer.js';

/* The GitHub client's options, requests and answers (client.ts). */

/** A token of a named credential, resolved for the API URL. */
export interface ClientToken {
  credential: string;
  token: BoundToken;
}

export interface GithubClientOptions {
  /** `https://api.github.com` or `https://ghe.example.com/api/v3` (no trailing slash). */
  apiUrl: string;
  /** Empty: anonymous requests. */
  tokens: readonly ClientToken[];
  budgets: TokenBudgets;
  /** Requests in flight at once. */
  concurrency: number;
  policy: EgressPolicy;
  retries: number;
  retryBaseMs: number;
  /** Aborts waits and requests (shutdown, lease lost). */
  signal?: AbortSignal;
  /** Told of every answer: the result label for metrics (`ok`, `not_modified`, `rate_limited`, `secondary_limited`, `server_error`, `network_error`, `client_error`). */
  onAnswer?: (result: string) => void;
  /** Told of each wait for a rate-limit reset or a retry-after, with its length. */
  onRateLimitWait?: (ms: number) => void;
  /** The longest answer read (default MAX_ANSWER_BYTES); a longer one fails with GithubAnswerTooLargeError, not retried. */
  maxAnswerBytes?: number;
}

/** What one GET asks for. */
export interface GetOptions {
  query?: Record<string, string | number>;
  /** Asks conditionally: a 304 costs no budget. */
  etag?: string | null;
  /** Counts the answer's body as it arrives, and may hold reading back (a list walk's PageBudget). */
  meter?: BodyMeter;
}

/** An answer the caller handles: 2xx, 304, and 4xx other than 401 and limit refusals. */
export interface GithubResponse<T = unknown> {
  status: number;
  data: T;
  headers: Record<string, string | undefined>;
  etag: string | undefined;
  links: Links;
  /** The server's `date`, in epoch ms (the clock `since` watermarks are taken from); ours when it is missing or far off. */
  date: number;
  /** The size of a success body in bytes (0 for others). */
  bytes: number;
}
