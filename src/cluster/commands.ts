import { Command } from 'commander';
import type { WithApi } from '../module/definition.js';
import type { ClusterApi } from './api.js';
import { printJson } from '../module/command-output.js';
import { option, wholeNumber } from '../module/command-options.js';
import type { ShardInfo } from './store/shards.js';

function shardLine(shard: ShardInfo): string {
  return `${shard.id}\t${shard.state}\t${shard.sources} source${shard.sources === 1 ? '' : 's'}\t${shard.bytes} bytes\t${shard.node}\tseen ${shard.lastSeenAt}`;
}

/** `forgesync shard list | reassign | drain`. */
export function clusterCommands(withApi: WithApi<ClusterApi>): Command[] {
  const shard = new Command('shard').description('storage shards: where the mirrors live in distributed mode');
  shard
    .command('list')
    .description('list the storage shards: state, sources placed, bytes, the worker serving it, when it was last seen')
    .option('--json', 'machine-readable output: [{ id, state, sources, bytes, node, lastSeenAt }]')
    .action(async (options: { json?: boolean }, command: Command) => {
      const shards = await withApi(command, (cluster) => cluster.listShards());
      if (options.json) printJson(shards);
      else if (shards.length === 0) process.stdout.write('no shards: a worker registers its shard when it starts (forgesync serve --role worker, FORGESYNC_SHARD)\n');
      else for (const entry of shards) process.stdout.write(`${shardLine(entry)}\n`);
    });
  shard
    .command('reassign')
    .description("move one source to another shard: that shard's worker syncs it, then it is placed there")
    .argument('<source>')
    .argument('<shard>')
    .option('--json', 'machine-readable output: { source, shard, moving }')
    .action(async (source: string, target: string, options: { json?: boolean }, command: Command) => {
      const moving = await withApi(command, (cluster) => cluster.reassignSource(source, target));
      if (options.json) printJson({ source, shard: target, moving });
      else process.stdout.write(moving ? `${source}: moving to shard ${target}\n` : `${source} is on shard ${target} already\n`);
    });
  shard
    .command('drain')
    .description('move every source off a shard (it takes no new ones); with --wait, return when none is left')
    .argument('<id>')
    .option('--wait', 'wait until no source is left on the shard')
    .addOption(option('--timeout <seconds>', 'with --wait: give up after this long (default 1800)', wholeNumber({ min: 1, unit: 'seconds' })))
    .option('--json', 'machine-readable output: { shard, moving }')
    .action(async (id: string, options: { wait?: boolean; timeout?: number; json?: boolean }, command: Command) => {
      const moving = await withApi(command, (cluster) => cluster.drainShard(id, { wait: Boolean(options.wait), ...(options.timeout ? { timeoutMs: options.timeout * 1000 } : {}) }));
      if (options.json) printJson({ shard: id, moving });
      else process.stdout.write(`shard ${id}: ${moving} source${moving === 1 ? '' : 's'} ${options.wait ? 'moved off' : 'moving off'}\n`);
    });
  return [shard];
}
