/** Longest header text read as a delay or a date: anything longer is neither. */
const MAX_TEXT = 64;

/**
 * A `Retry-After` value (RFC 9110 §10.2.3: delay-seconds or an HTTP-date)
 * in ms, from 0 to `maxMs`; undefined when it is neither (absent, negative,
 * fractional, not a date), so that the caller's default applies. The peer
 * is not trusted: a delay of 1e308 seconds or a date in the year 275760
 * waits `maxMs`, never an overflowing timer or an infinite `retry_at`.
 */
export function retryAfterMs(value: unknown, options: { now: number; maxMs: number }): number | undefined {
  const text = typeof value === 'string' && value.length <= MAX_TEXT ? value.trim() : undefined;
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, options.maxMs);
  // An HTTP-date names its weekday and month: text without a letter is none (V8 would read `-5` or `1.5` as dates in 2001).
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - options.now), options.maxMs);
}
