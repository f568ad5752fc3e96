import type { ForgesyncConfig } from '../app/config.js';
import { parseProtocols } from '../git/url.js';
import { checkConfig } from './config-check.js';
import { credentialChecks } from './credential-checks.js';
import { databaseChecks, leaseBackendChecks } from './database-checks.js';
import { diskChecks } from './disk-checks.js';
import { exposureChecks } from './exposure-checks.js';
import { gitChecks } from './git-checks.js';
import { natsChecks } from './nats-checks.js';
import { redisChecks } from './redis-checks.js';
import { readRegistryFacts } from './store/registry-facts.js';
import { ForgesyncError, UnavailableError } from '../errors.js';
import { within } from '../util/within.js';
import { fail, messageOf, type CheckGroup, type CheckResult, type DoctorReport, type RegistryOutcome } from './types.js';

/** Every group, in the order the report lists them. */
const CHECK_GROUPS: readonly CheckGroup[] = [databaseChecks, leaseBackendChecks, redisChecks, natsChecks, gitChecks, diskChecks, credentialChecks, exposureChecks];

/** Default of `forgesync doctor --timeout`: long enough for a TLS handshake far away, short enough for a person waiting. */
export const DEFAULT_CHECK_TIMEOUT_MS = 5_000;

export interface DoctorOptions {
  /** Loads the configuration as `serve` would (throws ConfigError). */
  load: () => ForgesyncConfig;
  /** The most one backend may take to answer. */
  timeoutMs: number;
}

/**
 * Runs every check: the configuration first (without one nothing else can
 * be checked), then the registry is read once, then the groups run side by
 * side, each under a deadline, so a backend that never answers becomes a
 * failed check and not a hung command.
 */
export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const { config, results: configResults } = checkConfig(options.load);
  if (!config) return reportOf(configResults);
  const { timeoutMs } = options;
  const protocols = parseProtocols(config.gitProtocols);
  const registry: RegistryOutcome = await withDeadline(readRegistryFacts(config.databaseUrl, { timeoutMs }), timeoutMs, 'reading the registry database').then(
    (facts) => ({ read: 'ok', facts }),
    (error: unknown) => ({ read: 'failed', error }),
  );
  const groups = await Promise.all(
    CHECK_GROUPS.map(async (group) => {
      const controller = new AbortController();
      // A group may make a few calls in a row, each bounded by timeoutMs; the deadline catches what none bounded.
      const deadlineMs = 2 * timeoutMs;
      try {
        return await withDeadline(group.run({ config, protocols, timeoutMs, signal: controller.signal, registry }), deadlineMs, `the ${group.name} checks`);
      } catch (error) {
        return [
          error instanceof CheckTimeoutError
            ? fail(group.name, error.message, `a backend these checks talk to did not answer: check that it runs and is reachable from this machine, or allow more with --timeout`)
            : error instanceof ForgesyncError
              ? fail(group.name, error.message, 'fix what it names (a setting forgesync only checks when it opens that backend, such as the jobs URL\'s prefix)')
              : fail(group.name, `the check itself failed: ${messageOf(error)}`, 'this is a bug in forgesync doctor: please report it with this line; the other checks are unaffected'),
        ];
      } finally {
        controller.abort();
      }
    }),
  );
  return reportOf([...configResults, ...groups.flat()]);
}

function reportOf(checks: CheckResult[]): DoctorReport {
  return { ok: checks.every((check) => check.status !== 'fail'), checks };
}

/** A check (or the registry read) did not finish within its deadline. */
class CheckTimeoutError extends UnavailableError {
  constructor(what: string, ms: number) {
    super(`${what} took longer than ${ms} ms`);
  }
}

/** `work`'s value, or CheckTimeoutError saying what took longer than `ms`. */
async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  const result = await within(work, ms);
  if (result === 'late') {
    work.catch(() => {}); // its later rejection, if any, is expected
    throw new CheckTimeoutError(what, ms);
  }
  return result;
}
