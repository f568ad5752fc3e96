import { Option } from 'commander';
import { InvalidInputError } from '../errors.js';
import { durationToMs, formatDuration, waitTimeoutMs } from '../util/duration.js';

/**
 * The one way `forgesync` commands validate their flags. Input: the text
 * given after a flag; returned: the typed value the command's action
 * receives (a number, milliseconds, a bigint, a module's own type). Every
 * parser runs while commander reads argv, before any action opens the data
 * directory, so a bad value stores nothing. It throws InvalidOptionError,
 * which names the flag, the value and what the flag accepts; main() reports
 * it as every error forgesync raises (`forgesync: <message>` on stderr, exit
 * status 1).
 *
 * Values a module validates itself (URLs, names, refs, schedules, sinks) are
 * passed to it as written: its message, shared with the HTTP API, is the one
 * callers see.
 */

/** A flag's value is malformed or out of range; nothing was opened or stored. */
export class InvalidOptionError extends InvalidInputError {
  constructor(
    /** The long flag, e.g. `--timeout`. */
    readonly flag: string,
    /** The text given after it. */
    readonly value: string,
    /** What the flag accepts, e.g. `a whole number from 1 to 100`. */
    readonly accepted: string,
  ) {
    super(`${flag} must be ${accepted}, not ${JSON.stringify(value.slice(0, 40))}`);
  }
}

/** Turns the text given after `flag` into its value; throws InvalidOptionError. */
export type OptionParser<T> = (text: string, flag: string) => T;

/**
 * A commander option whose value goes through `parse`. `defaultText` is the
 * default as a user would type it: parsed like any value (so the action
 * always gets the parsed type) and shown as text in `--help`.
 */
export function option<T>(flags: string, description: string, parse: OptionParser<T>, defaultText?: string): Option {
  const created = new Option(flags, description);
  const flag = created.long ?? created.short ?? flags;
  created.argParser((text: string) => parse(text, flag));
  if (defaultText !== undefined) created.default(parse(defaultText, flag), JSON.stringify(defaultText));
  return created;
}

// ---------------------------------------------------------------- parsers

/** Only digits (surrounding blanks ignored): no sign, fraction, exponent or hex, which Number() would take. */
const WHOLE = /^\d+$/;

/**
 * A whole number from `min` to `max` (`--concurrency`, `--batch`, `--port`);
 * `unit` names what it counts in the message (`a whole number of seconds, at least 1`).
 */
export function wholeNumber(bounds: { min: number; max?: number; unit?: string }): OptionParser<number> {
  const { min, max = Number.MAX_SAFE_INTEGER, unit } = bounds;
  const noun = unit ? `a whole number of ${unit}` : 'a whole number';
  const accepted = bounds.max !== undefined ? `${noun} from ${min} to ${max}` : unit ? `${noun}, at least ${min}` : `${noun} of at least ${min}`;
  return (text, flag) => {
    const trimmed = text.trim();
    const number = WHOLE.test(trimmed) ? Number(trimmed) : Number.NaN;
    if (!Number.isSafeInteger(number) || number < min || number > max) throw new InvalidOptionError(flag, text, accepted);
    return number;
  };
}

/** A whole number of at least `min` as a bigint, for counters past 2^53 (a lease's `--fence`). */
export function wholeBigInt(bounds: { min: bigint }): OptionParser<bigint> {
  const accepted = `a whole number of at least ${bounds.min}`;
  return (text, flag) => {
    const trimmed = text.trim();
    if (!WHOLE.test(trimmed) || BigInt(trimmed) < bounds.min) throw new InvalidOptionError(flag, text, accepted);
    return BigInt(trimmed);
  };
}

/** Longest duration a flag takes unless it says less: a year (as replication intervals and snapshot holds). */
const MAX_DURATION_MS = 365 * 86_400_000;

/**
 * Milliseconds of a duration from `min` to `max` ms: `250ms`, `30s`, `1h30m`,
 * `1d`, or plain digits read as milliseconds (`snapshot --wait`, `--hold`).
 */
export function duration(bounds: { min?: number; max?: number } = {}): OptionParser<number> {
  const { min = 0, max = MAX_DURATION_MS } = bounds;
  const range = min > 0 ? `a duration from ${formatDuration(min)} to ${formatDuration(max)}` : `a duration of at most ${formatDuration(max)}`;
  return (text, flag) => {
    const ms = durationToMs(text);
    if (ms === null) throw new InvalidOptionError(flag, text, 'a duration like 30s, 5m or 1h');
    if (ms < min || ms > max) throw new InvalidOptionError(flag, text, range);
    return ms;
  };
}

/** What `--timeout` of a `--wait` takes; its message is asserted by tests, keep it word for word. */
const SECONDS_OR_DURATION = 'a number of seconds (600) or a duration (90s, 10m)';

/**
 * Milliseconds of the `--timeout` of a `--wait` (`sync`, `import …`): seconds
 * (`600`, `2.5`) or a duration with its unit (`90s`, `10m`), as waitTimeoutMs reads them.
 */
export function secondsOrDuration(): OptionParser<number> {
  return (text, flag) => {
    try {
      return waitTimeoutMs(text);
    } catch {
      throw new InvalidOptionError(flag, text, SECONDS_OR_DURATION);
    }
  };
}

/**
 * A value read by a module's own parser, which throws exactly when the text
 * is not valid (e.g. the role list of `serve --role`): the option says what
 * it accepts in the words of every other flag.
 */
export function parsedBy<T>(parse: (text: string) => T, accepted: string): OptionParser<T> {
  return (text, flag) => {
    try {
      return parse(text);
    } catch {
      throw new InvalidOptionError(flag, text, accepted);
    }
  };
}

/** A parsed value with the text it was read from, for messages that echo what the user wrote. */
export interface AsWritten<T> {
  value: T;
  text: string;
}

/** `parse`, keeping the text too. */
export function asWritten<T>(parse: OptionParser<T>): OptionParser<AsWritten<T>> {
  return (text, flag) => ({ value: parse(text, flag), text });
}
