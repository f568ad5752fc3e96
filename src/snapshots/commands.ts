import { Command } from 'commander';
import { formatBytes } from './errors.js';
import type { SnapshotHold } from './holds.js';
import { objectAtJson, snapshotEntryJson } from './json.js';
import { parseObjectSpec } from './revision.js';
import type { WithApi } from '../module/definition.js';
import type { SnapshotsApi } from './api.js';
import { printJson } from '../module/command-output.js';
import { asWritten, duration, option, type AsWritten } from '../module/command-options.js';

/** `forgesync snapshot [create] | list | release` and `forgesync show`. */
export function snapshotCommands(withApi: WithApi<SnapshotsApi>): Command[] {
  const create = new Command('create')
    .description('materialise one commit of a source as a read-only directory (the default: forgesync snapshot <name> --ref R)')
    .argument('<name>', 'source name')
    .requiredOption('--ref <ref>', 'branch, tag or commit sha')
    .option('--sync', 'sync the mirror first, under the source lease')
    .addOption(option('--wait <duration>', 'how long to wait for that sync before serving the last synced commit marked stale', asWritten(duration()), '30s'))
    .addOption(option('--hold <duration>', 'how long the snapshot is protected from eviction (default: FORGESYNC_SNAPSHOT_HOLD)', duration({ min: 1 })))
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { ref: string; sync?: boolean; wait: AsWritten<number>; hold?: number; json?: boolean }, command: Command) => {
      const snapshot = await withApi(command, async (snapshots) =>
        snapshots.open(name, options.ref, {
          sync: Boolean(options.sync),
          waitMs: options.wait.value,
          holdMs: options.hold ?? snapshots.defaultHoldMs,
          owner: 'cli',
        }),
      );
      if (options.json) printJson(snapshot.toJSON());
      else {
        if (snapshot.stale) process.stderr.write(`forgesync: no sync of ${name} could be had within ${options.wait.text}; serving the last synced commit\n`);
        process.stdout.write(`${snapshot.sha}\t${snapshot.path}\n`);
      }
    });

  const list = new Command('list')
    .description('snapshots on disk, most recently used first, with their holds')
    .option('--json', 'machine-readable output')
    .action(async (options: { json?: boolean }, command: Command) => {
      const { entries, budget } = await withApi(command, async (snapshots) => ({ entries: snapshots.list(), budget: snapshots.budget() }));
      if (options.json) printJson(entries.map(snapshotEntryJson));
      else if (entries.length === 0) process.stdout.write('no snapshots\n');
      else {
        for (const entry of entries) {
          const holds = entry.holds.length === 0 ? 'unheld' : `${entry.holds.length} hold(s): ${entry.holds.map(describeHold).join(' ')}`;
          process.stdout.write(`${entry.source}\t${entry.sha}\t${entry.files} files\t${entry.bytes} bytes\tused ${entry.lastUsedAt}\t${holds}\n`);
        }
        // The figures a refused snapshot (409) is measured by.
        process.stdout.write(`held: ${formatBytes(budget.heldBytes)} of ${formatBytes(budget.maxBytes)} (FORGESYNC_SNAPSHOT_MAX_BYTES)\n`);
      }
    });

  const release = new Command('release')
    .description('end a snapshot hold; the directory is evicted when the budget needs the room')
    .argument('<handle>', 'the handle printed by forgesync snapshot --json')
    .option('--json', 'machine-readable output')
    .action(async (handle: string, options: { json?: boolean }, command: Command) => {
      await withApi(command, async (snapshots) => snapshots.release(handle));
      if (options.json) printJson({ released: handle });
      else process.stdout.write(`released ${handle}\n`);
    });

  const snapshot = new Command('snapshot').description('consistent read-only per-commit snapshots for analysis jobs');
  snapshot.addCommand(create, { isDefault: true });
  snapshot.addCommand(list);
  snapshot.addCommand(release);

  const show = new Command('show')
    .description('print a file (or list a directory) of a commit without materialising it')
    .argument('<name>', 'source name')
    .argument('<ref:path>', 'e.g. main:README.md, v1.2:src/ or 9fceb02:')
    .option('--json', 'machine-readable output')
    .action(async (name: string, spec: string, options: { json?: boolean }, command: Command) => {
      const { revision, path } = parseObjectSpec(spec);
      const object = await withApi(command, (snapshots) => snapshots.readAt(name, revision, path));
      if (options.json) printJson(objectAtJson(object));
      else if (object.type === 'blob') process.stdout.write(object.content);
      else for (const entry of object.entries) process.stdout.write(`${entry.mode.padStart(6, '0')} ${entry.type} ${entry.oid}\t${entry.name}\n`);
    });

  return [snapshot, show];
}

/** `<handle>(api, token 1f2e…)`: whose hold it is, so the operator knows what releasing it ends. */
function describeHold(hold: SnapshotHold): string {
  return `${hold.handle}(${hold.owner}${hold.creator ? `, token ${hold.creator}` : ''})`;
}
