import { Cron } from 'croner';
import { InvalidInputError } from '../errors.js';
import { durationToMs, formatDuration } from '../util/duration.js';

/** The schedule text is not an interval like `30m` or a five-field cron expression. */
export class InvalidScheduleError extends InvalidInputError {}

const DAY_MS = 86_400_000;
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_MS = 365 * DAY_MS;

/** Parses `90s`, `30m`, `1h`, `1d`, `1h30m` or a number of milliseconds; a sync interval is at least 1s. */
export function parseInterval(text: string): number {
  return parseDuration(text, MIN_INTERVAL_MS);
}

/** Parses a duration like `250ms`, `15s`, `1h30m` or plain milliseconds, at least `minMs`. */
export function parseDuration(text: string, minMs = 1): number {
  const total = durationToMs(text);
  if (total === null) throw new InvalidScheduleError(`interval "${text}" is not valid; use e.g. 90s, 30m, 1h or 1d`);
  if (total < minMs || total > MAX_INTERVAL_MS) {
    throw new InvalidScheduleError(`duration "${text}" must be between ${formatDuration(minMs)} and 365d`);
  }
  return total;
}

/** Validates a cron expression (5 or 6 fields), returning it unchanged. */
export function parseCron(expression: string): string {
  try {
    new Cron(expression, { paused: true }).stop();
    return expression;
  } catch (error) {
    throw new InvalidScheduleError(`cron expression "${expression}" is not valid: ${(error as Error).message}`);
  }
}

/** When a cron-scheduled source is next due after `from`. */
export function nextCronRun(expression: string, from: Date): Date | null {
  const cron = new Cron(expression, { paused: true });
  const next = cron.nextRun(from);
  cron.stop();
  return next;
}
