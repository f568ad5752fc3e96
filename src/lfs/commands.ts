import { Command } from 'commander';
import type { WithApi } from '../module/definition.js';
import { printJson } from '../module/command-output.js';
import { duration, option } from '../module/command-options.js';
import type { LfsApi, LfsObjectState } from './api.js';

const NOT_STORED: readonly LfsObjectState[] = ['pending', 'missing', 'failed', 'refused'];

/** `forgesync lfs fsck <name>`, `forgesync lfs missing <name>` and `forgesync lfs prune`. */
export function lfsCommands(withApi: WithApi<LfsApi>): Command[] {
  const command = new Command('lfs').description("a source's Git LFS objects: verify them, list those not stored");
  command
    .command('fsck')
    .description("hash a source's stored LFS objects again; damaged or absent ones are fetched again by its next sync (exit status 1 if any)")
    .argument('<name>')
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { json?: boolean }, cmd: Command) => {
      const report = await withApi(cmd, (lfs) => lfs.fsck(name));
      if (options.json) printJson(report);
      else {
        process.stdout.write(`${report.name}: ${report.checked} objects checked, ${report.ok} ok, ${report.damaged.length} damaged, ${report.absent.length} absent\n`);
        for (const oid of report.damaged) process.stdout.write(`damaged\t${oid}\n`);
        for (const oid of report.absent) process.stdout.write(`absent\t${oid}\n`);
      }
      if (report.damaged.length + report.absent.length > 0) process.exitCode = 1;
    });
  command
    .command('missing')
    .description('list the LFS objects a source references but has not stored (missing upstream, failed, over the size cap, pending), with why')
    .argument('<name>')
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { json?: boolean }, cmd: Command) => {
      const rows = await withApi(cmd, (lfs) => lfs.objects(name, NOT_STORED));
      if (options.json) printJson(rows.map((row) => ({ ...row, updatedAt: row.updatedAt.toISOString() })));
      else for (const row of rows) process.stdout.write(`${row.oid}\t${row.size}\t${row.state}\t${row.error ?? ''}\n`);
    });
  command
    .command('prune')
    .description("delete the LFS objects on this machine's disk that no source references any more (their sources were removed)")
    .addOption(option('--grace <duration>', 'keep objects used this recently (a sync may be adopting one)', duration({ min: 0 }), '1h'))
    .option('--json', 'machine-readable output')
    .action(async (options: { grace: number; json?: boolean }, cmd: Command) => {
      const report = await withApi(cmd, (lfs) => lfs.prune({ graceMs: options.grace }));
      if (options.json) printJson(report);
      else process.stdout.write(`deleted ${report.deleted} objects (${report.bytes} bytes), kept ${report.kept}\n`);
    });
  return [command];
}
