import { Command, CommanderError } from 'commander';
import type { ModuleApis } from '../app/compose.js';
import { MODULES } from '../app/modules.js';
import type { AnyModuleDefinition } from '../module/definition.js';
import { doctorCommand } from '../doctor/command.js';
import { withApiOf } from './app-context.js';
import { commandConfig } from './context.js';
import { leaseCommands } from './lease-commands.js';
import { serveCommand } from './serve-command.js';
import { startTracing, stopTracing } from '../tracing/start.js';

/** Builds the `forgesync` command tree. */
export function buildProgram(): Command {
  const program = new Command('forgesync')
    .description('replicate Git repositories and their project data under exclusive, fenced leases')
    .option('--config <file>', 'JSON config file (default: $FORGESYNC_CONFIG or ./forgesync.json)')
    .option('--data-dir <dir>', 'data directory (default: $FORGESYNC_DATA_DIR or ./data)')
    .option('--database-url <url>', 'registry database URL (default: $FORGESYNC_DATABASE_URL)')
    .option('--lease-url <url>', 'lease backend URL (default: $FORGESYNC_LEASE_URL, else the database)')
    .showHelpAfterError()
    .exitOverride();
  // Each module's commands reach its own API only.
  for (const module of MODULES as readonly AnyModuleDefinition[]) {
    for (const command of module.commands(withApiOf(module.name as keyof ModuleApis))) program.addCommand(command);
  }
  program.addCommand(serveCommand());
  program.addCommand(leaseCommands());
  program.addCommand(doctorCommand({ configOf: (command) => commandConfig(command) }));
  overrideExits(program);
  return program;
}

// Errors come back to main() as exceptions instead of process.exit().
function overrideExits(command: Command): void {
  command.exitOverride();
  for (const child of command.commands) overrideExits(child);
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  try {
    // Tracing only when the OTEL_* variables ask for it (tracing/start.ts); its last spans are exported below.
    await startTracing();
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    // Every error forgesync raises on purpose carries a message meant for the user.
    if (process.env.FORGESYNC_DEBUG) console.error(error);
    else process.stderr.write(`forgesync: ${(error as Error)?.message ?? String(error)}\n`);
    return 1;
  } finally {
    await stopTracing();
  }
}
