import type { ForgesyncConfig } from '../app/config.js';
import { requireSharedBackends } from '../cluster/preflight.js';
import { SharedBackendsRequiredError } from '../cluster/errors.js';
import { parseRoles } from '../cluster/roles.js';
import { ConfigError } from '../config/errors.js';
import { fail, messageOf, ok, type CheckResult } from './types.js';

/** The configuration, or the failed checks saying why there is none. */
type ConfigOutcome = { config: ForgesyncConfig; results: CheckResult[] } | { config: undefined; results: CheckResult[] };

/**
 * Loads the configuration the way `serve` does (file, environment, flags)
 * and makes the check `serve` makes before it listens (a distributed role
 * needs shared backends). Each bad setting is one failing check named after it.
 */
export function checkConfig(load: () => ForgesyncConfig): ConfigOutcome {
  let config: ForgesyncConfig;
  try {
    config = load();
  } catch (error) {
    if (!(error instanceof ConfigError)) return { config: undefined, results: [fail('config', messageOf(error), 'fix the configuration; the other checks need it')] };
    const results = error.problems.map((problem) => {
      const setting = /^([A-Za-z]+) \(/.exec(problem)?.[1];
      return fail(setting ? `config:${setting}` : 'config', problem, `fix ${setting ? `the setting ${setting} where it is given (in parentheses)` : 'the config file'}; the README's Configuration table lists every setting`);
    });
    return { config: undefined, results };
  }
  const source = config.configFile ? `${config.configFile}, environment and flags` : 'environment and flags (no config file)';
  const results = [ok('config', `valid: ${source}; data dir ${config.dataDir}, role ${config.role}`)];
  try {
    requireSharedBackends(parseRoles(config.role), config);
  } catch (error) {
    if (!(error instanceof SharedBackendsRequiredError)) throw error;
    results.push(fail('config:role', `role ${error.roles} needs backends other processes share`, error.missing.join('; ')));
  }
  return { config, results };
}
