import { InvalidInputError } from '../errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of `250ms`, `15s`, `1h30m`, `1d` or plain digits (milliseconds); null when the text is none of those. */
export function durationToMs(text: string): number | null {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (!/^(?:\d+(?:ms|s|m|h|d))+$/.test(trimmed)) return null;
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)(ms|s|m|h|d)/g)) total += Number(amount) * UNITS[unit!]!;
  return total;
}

/**
 * `--timeout` of a CLI `--wait` (`sync`, `import …`), in milliseconds:
 * seconds (`600`, `2.5`) or a duration with its unit (`90s`, `10m`).
 * @throws InvalidInputError naming the value.
 */
export function waitTimeoutMs(value: string): number {
  const text = String(value).trim();
  const ms = /^\d+(\.\d+)?$/.test(text) ? Math.round(Number(text) * 1000) : /\d(ms|s|m|h|d)$/.test(text) ? durationToMs(text) : null;
  if (ms === null || !Number.isSafeInteger(ms)) throw new InvalidInputError(`--timeout must be a number of seconds (600) or a duration (90s, 10m), not ${JSON.stringify(text.slice(0, 40))}`);
  return ms;
}

/** Human form of a duration: 3600000 → "1h". */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNITS[unit]! === 0) return `${ms / UNITS[unit]!}${unit}`;
  }
  return `${ms}ms`;
}
