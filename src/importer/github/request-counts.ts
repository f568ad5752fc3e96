/** What a client did, by kind; a run adds these to the import's counters. */
export interface RequestCounts {
  /** Every answer, retries included. */
  total: number;
  /** Answers that cost rate budget (everything but 304s and limit refusals). */
  counted: number;
  notModified: number;
  retried: number;
  rateLimitWaits: number;
  rateLimitWaitMs: number;
  /** Secondary-limit answers (each also a rate-limit wait). */
  secondaryLimited: number;
}

export const zeroCounts = (): RequestCounts => ({ total: 0, counted: 0, notModified: 0, retried: 0, rateLimitWaits: 0, rateLimitWaitMs: 0, secondaryLimited: 0 });
