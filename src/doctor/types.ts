import type { ForgesyncConfig } from '../app/config.js';
import type { RegistryFacts } from './store/registry-facts.js';

/** `ok`: nothing to do; `warn`: works, but look at it; `fail`: forgesync will not work (or not safely) until fixed. */
export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One line of the report (`forgesync doctor --json` prints these: a contract for other tools). */
export interface CheckResult {
  /** What was checked, stable across runs: `config`, `database`, `redis:jobs`, `disk:data-dir`, `credential:github`… */
  name: string;
  status: CheckStatus;
  /** What was found: versions, sizes, names and hosts; never a secret. */
  detail: string;
  /** What to do about it; present whenever status is not ok. */
  hint?: string;
}

/** The whole report: `ok` is false when any check failed (warnings alone leave it true). */
export interface DoctorReport {
  ok: boolean;
  checks: CheckResult[];
}

/** What every group of checks gets: the loaded configuration and how long one backend may take to answer. */
export interface CheckContext {
  config: ForgesyncConfig;
  /** FORGESYNC_GIT_PROTOCOLS parsed (already validated when the configuration loaded). */
  protocols: ReadonlySet<string>;
  /** The most one check may take; a backend that does not answer by then is a failure, not a hang. */
  timeoutMs: number;
  /** Aborted when the group's time is up (or it ended): git started by a check is killed with it. */
  signal: AbortSignal;
  /** What was read of the registry database, read once before the groups run; or why it could not be. */
  registry: RegistryOutcome;
}

/** The registry as read, or the failure reading it (the database check reports it; the others then skip what they needed from it). */
export type RegistryOutcome = { read: 'ok'; facts: RegistryFacts } | { read: 'failed'; error: unknown };

/** A group of related checks (the backends, git, disk…), run under one deadline. */
export interface CheckGroup {
  /** The name a timeout or crash of the whole group is reported under. */
  name: string;
  run(context: CheckContext): Promise<CheckResult[]>;
}

/** A passing check. */
export function ok(name: string, detail: string): CheckResult {
  return { name, status: 'ok', detail };
}

/** A check that found something to look at. */
export function warn(name: string, detail: string, hint: string): CheckResult {
  return { name, status: 'warn', detail, hint };
}

/** A check that found something forgesync cannot work with. */
export function fail(name: string, detail: string, hint: string): CheckResult {
  return { name, status: 'fail', detail, hint };
}

/** The message of anything thrown (drivers throw strings and objects too). */
export function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(messageOf).join('; ');
  const message = (error as Error)?.message;
  return typeof message === 'string' && message !== '' ? message : String((error as { code?: string })?.code ?? error);
}
