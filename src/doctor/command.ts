import { Command } from 'commander';
import type { ForgesyncConfig } from '../app/config.js';
import { duration, option } from '../module/command-options.js';
import { printJson } from '../module/command-output.js';
import { reportText } from './format.js';

export interface DoctorCommandOptions {
  /** The configuration for the command, as every command loads it (global flags, environment, file): the CLI's commandConfig. */
  configOf: (command: Command) => ForgesyncConfig;
}

/**
 * `forgesync doctor`: what a new operator runs first. Checks the
 * configuration, every configured backend, git, disk, clock, credentials,
 * egress and webhooks, and exits 1 when any check failed (warnings alone: 0).
 */
export function doctorCommand(options: DoctorCommandOptions): Command {
  const { configOf } = options;
  return new Command('doctor')
    .description('check the configuration, backends, git, disk space, clock, credentials and webhooks; exit 1 if any check fails')
    .option('--json', 'machine-readable report: {"ok", "checks": [{"name", "status", "detail", "hint"?}]}')
    .addOption(option('--timeout <duration>', 'the most one check may wait for a backend', duration({ min: 100, max: 600_000 }), '5s'))
    .action(async (flags: { json?: boolean; timeout?: number }, command: Command) => {
      // Loaded when run: the checks bring the drivers (pg, ioredis, NATS) every other command starts without.
      const { DEFAULT_CHECK_TIMEOUT_MS, runDoctor } = await import('./runner.js');
      const report = await runDoctor({ load: () => configOf(command), timeoutMs: flags.timeout ?? DEFAULT_CHECK_TIMEOUT_MS });
      if (flags.json) printJson(report);
      else process.stdout.write(reportText(report));
      if (!report.ok) process.exitCode = 1;
    });
}
