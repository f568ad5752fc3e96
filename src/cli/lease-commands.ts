import { Command } from 'commander';
import { openLeaseManager } from '../leases/open.js';
import type { LeaseManager } from '../leases/manager.js';
import { commandConfig } from './context.js';
import { option, wholeBigInt } from '../module/command-options.js';
import { holderJson, holderLine, printJson } from '../module/command-output.js';

async function withManager<T>(command: Command, run: (leases: LeaseManager) => Promise<T>): Promise<T> {
  const leases = await openLeaseManager(commandConfig(command).leaseUrl);
  try {
    return await run(leases);
  } finally {
    await leases.close();
  }
}

/** `forgesync lease list|inspect|release`. */
export function leaseCommands(): Command {
  const lease = new Command('lease').description('inspect and manage exclusive leases');

  lease
    .command('list')
    .description('list live lease holders')
    .option('--prefix <prefix>', 'only keys starting with this prefix')
    .option('--json', 'machine-readable output')
    .action(async (options: { prefix?: string; json?: boolean }, command: Command) => {
      const holders = await withManager(command, (leases) => leases.list(options.prefix ?? ''));
      if (options.json) printJson(holders.map(holderJson));
      else if (holders.length === 0) process.stdout.write('no leases held\n');
      else for (const holder of holders) process.stdout.write(`${holderLine(holder)}\n`);
    });

  lease
    .command('inspect')
    .description('show the holder of one lease')
    .argument('<key>', 'lease key')
    .option('--json', 'machine-readable output')
    .action(async (key: string, options: { json?: boolean }, command: Command) => {
      const holder = await withManager(command, (leases) => leases.inspect(key));
      if (options.json) printJson(holder ? holderJson(holder) : null);
      else process.stdout.write(holder ? `${holderLine(holder)}\n` : `lease "${key}" is free\n`);
    });

  lease
    .command('release')
    .description('force-release an orphaned lease (whoever holds it)')
    .argument('<key>', 'lease key')
    .option('--force', 'required: confirms releasing a lease this process does not hold')
    .addOption(option('--fence <n>', 'release only if the holder has this fence', wholeBigInt({ min: 1n })))
    .action(async (key: string, options: { force?: boolean; fence?: bigint }, command: Command) => {
      if (!options.force) {
        command.error('refusing to release a lease held by another process without --force', { exitCode: 2 });
      }
      const released = await withManager(command, (leases) => leases.forceRelease(key, { fence: options.fence }));
      if (released) {
        process.stdout.write(`released lease "${key}"${options.fence ? ` (fence ${options.fence})` : ''}\n`);
      } else {
        process.stderr.write(
          `lease "${key}" was not released: ${options.fence ? `no live holder with fence ${options.fence}` : 'it is not held'}\n`,
        );
        process.exitCode = 1;
      }
    });

  return lease;
}
