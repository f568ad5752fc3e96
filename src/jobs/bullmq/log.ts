import type { Logger } from '../../logging/logger.js';

/** A message repeated by the same source within this period is counted instead of logged again. */
const REPEAT_MS = 30_000;

/**
 * Logs the errors BullMQ and ioredis emit (an unanswered 'error' event would crash the process).
 * While Redis is down every connection reports each reconnect attempt, and a job whose keys were
 * wiped fails its lock renewal every few seconds; the same message from the same source is
 * logged once per REPEAT_MS, with how often it was seen meanwhile.
 */
export class ErrorLog {
  readonly #last = new Map<string, { message: string; at: number; repeated: number }>();

  constructor(private readonly logger: Logger) {}

  report(source: string, err: unknown): void {
    const message = (err as Error)?.message ?? String(err);
    const now = Date.now();
    const last = this.#last.get(source);
    if (last && last.message === message && now - last.at < REPEAT_MS) {
      last.repeated++;
      return;
    }
    const repeated = last?.message === message ? last.repeated : 0;
    this.#last.set(source, { message, at: now, repeated: 0 });
    this.logger.warn(
      { event: 'jobs_backend_error', source, err: message, ...(repeated ? { repeated } : {}) },
      `job queue (${source}): ${message}`,
    );
  }
}
