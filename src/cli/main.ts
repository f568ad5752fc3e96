import { Command, CommanderError } from 'commander';
import { MODULES } from '../app/modules.js';
import { withApiOf } from './app-context.js';
import { leaseCommands } from './lease-commands.js';
import { serveCommand } from './serve-command.js';

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
  for (const module of MODULES) {
    // Each module's commands get its API only (the generic hides which module a definition is).
    const commands = (module.commands as (withApi: ReturnType<typeof withApiOf>) => Command[])(withApiOf(module.name));
    for (const command of commands) program.addCommand(command);
  }
  program.addCommand(serveCommand());
  program.addCommand(leaseCommands());
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
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    // Every error forgesync raises on purpose carries a message meant for the user.
    if (process.env.FORGESYNC_DEBUG) console.error(error);
    else process.stderr.write(`forgesync: ${(error as Error)?.message ?? String(error)}\n`);
    return 1;
  }
}
