import { Command } from 'commander';
import { withForgesync } from '../cli/app-context.js';
import { printJson } from '../cli/output.js';
import type { ShardInfo } from './shards.js';

function shardLine(shard: ShardInfo): string {
  return `${shard.id}\t${shard.state}\t${shard.sources} source${shard.sources === 1 ? '' : 's'}\t${shard.bytes} bytes\t${shard.node}\tseen ${shard.lastSeenAt}`;
}

/** `forgesync shard list`. */
export function clusterCommands(): Command[] {
  const shard = new Command('shard').description('storage shards: where the mirrors live in distributed mode');
  shard
    .command('list')
    .description('list the storage shards: state, sources placed, bytes, the worker serving it, when it was last seen')
    .option('--json', 'machine-readable output: [{ id, state, sources, bytes, node, lastSeenAt }]')
    .action(async (options: { json?: boolean }, command: Command) => {
      const shards = await withForgesync(command, (app) => app.shards.list());
      if (options.json) printJson(shards);
      else if (shards.length === 0) process.stdout.write('no shards: a worker registers its shard when it starts (forgesync serve --role worker, FORGESYNC_SHARD)\n');
      else for (const entry of shards) process.stdout.write(`${shardLine(entry)}\n`);
    });
  return [shard];
}
