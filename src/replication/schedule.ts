import { Cron } from 'croner';
import { InvalidInputError } from '../errors.js';

/** The schedule text is not an interval like `30m` or a five-field cron expression. */
export class InvalidScheduleError extends InvalidInputError {}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_MS = 365 * UNITS.d!;

/** Parses `90s`, `30m`, `1h`, `1d`, `1h30m` or a number of milliseconds; a sync interval is at least 1s. */
export function parseInterval(text: string): number {
  return parseDuration(text, MIN_INTERVAL_MS);
}

/** Parses a duration like `250ms`, `15s`, `1h30m` or plain milliseconds, at least `minMs`. */
export function parseDuration(text: string, minMs = 1): number {
  const trimmed = text.trim();
  let total = 0;
  if (/^\d+$/.test(trimmed)) total = Number(trimmed);
  else {
    const parts = trimmed.match(/^(?:\d+(?:ms|s|m|h|d))+$/) ? trimmed.match(/\d+(?:ms|s|m|h|d)/g) : null;
    if (!parts) throw new InvalidScheduleError(`interval "${text}" is not valid; use e.g. 90s, 30m, 1h or 1d`);
    for (const part of parts) {
      const [, amount, unit] = /^(\d+)(ms|s|m|h|d)$/.exec(part)!;
      total += Number(amount) * UNITS[unit!]!;
    }
  }
  if (total < minMs || total > MAX_INTERVAL_MS) {
    throw new InvalidScheduleError(`duration "${text}" must be between ${formatInterval(minMs)} and 365d`);
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

/** Human form of an interval: 3600000 → "1h". */
export function formatInterval(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNITS[unit]! === 0) return `${ms / UNITS[unit]!}${unit}`;
  }
  return `${ms}ms`;
}
