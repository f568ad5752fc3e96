import { Command } from 'commander';
import type { SourceWithRegistry } from '../store/types.js';
import { redactUrl } from '../util/redact.js';
import type { WithApi } from '../module/definition.js';
import type { ReplicationApi } from './api.js';
import { printJson } from '../module/command-output.js';
import { option, secondsOrDuration } from '../module/command-options.js';

/**
 * The JSON form of a source in `forgesync status --json` (a contract for
 * other tools). `status` passes the sections other parts report of the
 * source (`housekeeping`, `lfs`: see SourceStatusSection), which follow the
 * registry's fields; `add --json` and `sync --json` show the registry only.
 */
export function sourceStatusJson(source: SourceWithRegistry, sections?: Record<string, unknown>) {
  const row = source.registry;
  return {
    name: source.name,
    url: redactUrl(source.url),
    state: row.state,
    enabled: source.enabled,
    retryCount: row.retryCount,
    nextRetryAt: row.nextRetryAt?.toISOString() ?? null,
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    lastSyncedAt: row.lastSyncedAt?.toISOString() ?? null,
    lastFailure: row.lastFailure,
    checksum: row.checksum,
    verificationState: row.verificationState,
    missingOnPrimary: row.missingOnPrimary,
    mirrorPath: row.mirrorPath,
    requestedSeq: row.requestedSeq,
    completedSeq: row.completedSeq,
    shard: source.shard,
    ...sections,
  };
}

function statusLine(source: SourceWithRegistry): string {
  const row = source.registry;
  const when = row.lastSyncedAt ? `synced ${row.lastSyncedAt.toISOString()}` : 'never synced';
  const failure = row.state === 'failed' ? `  retry #${row.retryCount} at ${row.nextRetryAt?.toISOString()}: ${row.lastFailure ?? ''}` : '';
  return `${source.name}\t${row.state}${row.missingOnPrimary ? ' (missing on primary)' : ''}\t${when}\t${redactUrl(source.url)}${failure}`;
}

/** `forgesync add|remove|sync|resync|status`. */
export function replicationCommands(withApi: WithApi<ReplicationApi>): Command[] {
  const add = new Command('add')
    .description('register an upstream repository to mirror')
    .argument('<url>', 'upstream URL (https, ssh; http/file/local paths only when FORGESYNC_GIT_PROTOCOLS lists them)')
    .option('--name <name>', 'source name (default: from the URL)')
    .option('--interval <interval>', 'sync interval, e.g. 30m or 1h (default: FORGESYNC_SYNC_INTERVAL)')
    .option('--cron <expression>', 'cron schedule instead of an interval')
    .option('--credential <name>', 'a credential the operator defined for this host (FORGESYNC_SECRETS_FILE or FORGESYNC_CREDENTIAL_<NAME>)')
    .option('--json', 'machine-readable output')
    .action(async (url: string, options: { name?: string; interval?: string; cron?: string; credential?: string; json?: boolean }, command: Command) => {
      const source = await withApi(command, (replication) =>
        replication.addSource({ url, name: options.name, interval: options.interval, cron: options.cron, credentialRef: options.credential }),
      );
      if (options.json) printJson(sourceStatusJson(source));
      else process.stdout.write(`added ${source.name} (${redactUrl(source.url)}); first sync requested\n`);
    });

  const remove = new Command('remove')
    .description('remove a source and delete its mirror')
    .argument('<name>')
    .action(async (name: string, _options: unknown, command: Command) => {
      await withApi(command, (replication) => replication.removeSource(name));
      process.stdout.write(`removed ${name}\n`);
    });

  const sync = new Command('sync')
    .description('request a sync of one source (and with --wait, run it here until done)')
    .argument('<name>')
    .option('--wait', 'wait until a successful sync served this request (here or in another process); exit status 1 if that sync failed or the timeout passed')
    .addOption(option('--timeout <seconds>', 'give up waiting after this many seconds (or a duration: 90s, 10m)', secondsOrDuration(), '600'))
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { wait?: boolean; timeout: number; json?: boolean }, command: Command) => {
      if (!options.wait) {
        const seq = await withApi(command, (replication) => replication.requestSync(name, { trigger: 'cli' }));
        if (options.json) printJson({ name, requested: seq });
        else process.stdout.write(`sync of ${name} requested (request #${seq}); a running forgesync serve picks it up\n`);
        return;
      }
      const source = await withApi(command, (replication) =>
        replication.sync(name, { trigger: 'cli', timeoutMs: options.timeout }),
      );
      if (options.json) printJson(sourceStatusJson(source));
      else process.stdout.write(`${statusLine(source)}\n`);
      // 0 exactly when a successful round served the request recorded here, whoever ran it.
      if (!source.served) process.exitCode = 1;
    });

  const resync = new Command('resync')
    .description('request a new sync of one source, of every failed source, or of all')
    .argument('[name]')
    .option('--failed', 'every source in state failed')
    .option('--all', 'every source')
    .option('--json', 'machine-readable output')
    .action(async (name: string | undefined, options: { failed?: boolean; all?: boolean; json?: boolean }, command: Command) => {
      const chosen = [name !== undefined, Boolean(options.failed), Boolean(options.all)].filter(Boolean).length;
      if (chosen !== 1) command.error('give exactly one of <name>, --failed or --all', { exitCode: 2 });
      const target = name !== undefined ? { name } : options.failed ? ('failed' as const) : ('all' as const);
      const count = await withApi(command, (replication) => replication.requestSyncMany(target, { trigger: 'cli' }));
      if (options.json) printJson({ requested: count });
      else process.stdout.write(`resync requested for ${count} source${count === 1 ? '' : 's'}\n`);
    });

  const status = new Command('status')
    .description('show the registry: state, retries, last sync and failure of each source')
    .argument('[name]')
    .option('--json', 'machine-readable output')
    .action(async (name: string | undefined, options: { json?: boolean }, command: Command) => {
      const { sources, sections } = await withApi(command, async (replication) => {
        const sources = name ? [await replication.getSource(name)] : await replication.listSources();
        return { sources, sections: options.json ? await replication.statusSections(sources) : new Map<number, Record<string, unknown>>() };
      });
      const json = (source: SourceWithRegistry) => sourceStatusJson(source, sections.get(source.id));
      if (options.json) printJson(name ? json(sources[0]!) : sources.map(json));
      else if (sources.length === 0) process.stdout.write('no sources; add one with: forgesync add <url>\n');
      else for (const source of sources) process.stdout.write(`${statusLine(source)}\n`);
    });

  return [add, remove, sync, resync, status];
}
