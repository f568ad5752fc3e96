import { Command, Option } from 'commander';
import type { WithApi } from '../module/definition.js';
import type { FeedsApi } from './api.js';
import { printJson } from '../module/command-output.js';
import { option, wholeNumber } from '../module/command-options.js';
import type { FeedStatus } from './status.js';

/** One line of a feed's state for humans. */
function statusLine(status: FeedStatus): string {
  const state = status.disabled ? 'disabled' : status.paused ? 'paused' : status.holder ? `running (${status.holder})` : 'idle';
  const full = status.fullSync.running ? `  full sync ${status.fullSync.progress.exported} exported` : status.fullSync.requested ? '  full sync requested' : '';
  const last = status.lastRun ? `  last ${status.lastRun.operation} ${status.lastRun.outcome} (${status.lastRun.delivered}) at ${status.lastRun.finishedAt}` : '';
  return `${status.name}\t${status.sink}\t${state}\tlag ${status.lag.changes} (${status.lag.oldestAgeS}s)\tacked ${status.ackedSeq}/${status.headSeq}${status.deadLetters ? `\t${status.deadLetters} dead` : ''}${full}${last}`;
}

const print = (json: boolean | undefined, status: FeedStatus, text?: string) => (json ? printJson(status) : process.stdout.write(`${text ?? statusLine(status)}\n`));

/** `forgesync feed add|list|status|sync|resync|pause|resume|replay|dead-letters|remove`. */
export function feedCommands(withApi: WithApi<FeedsApi>): Command[] {
  const command = new Command('feed').description('export changes (ref updates, source states, imported objects) to HTTP endpoints, NATS JetStream or files');
  addCommand(command, withApi);
  readCommands(command, withApi);
  runCommands(command, withApi);
  deadLetterAndRemoveCommands(command, withApi);
  return [command];
}

/** `feed add`. */
function addCommand(command: Command, withApi: WithApi<FeedsApi>): void {
  command
    .command('add')
    .description('add a feed; it first sends the current state of everything in scope, then every change')
    .argument('<name>')
    .requiredOption('--sink <url>', 'http(s)://… (Standard Webhooks), nats://host:port/<subject> (JetStream) or file:///dir (NDJSON, inside FORGESYNC_FEED_FILE_ROOT)')
    .option('--types <types>', 'change types, comma-separated (dev.forgesync.ref.*, dev.forgesync.source.state, dev.forgesync.import.*, …)')
    .option('--sources <glob>', 'only sources and imports whose name matches (* and ?)')
    .option('--secret <name>', 'feed secret (defined by the operator, bound to the sink host) holding the signing secret (http) or token (nats)')
    // Replaced by --secret: still parsed, so that it is refused with a message saying so.
    .addOption(new Option('--secret-env <var>').hideHelp())
    .addOption(option('--batch <n>', 'events per request (http: an array above 1) or per file (default: 1 for http, 100 otherwise)', wholeNumber({ min: 1 })))
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { sink: string; types?: string; sources?: string; secret?: string; secretEnv?: string; batch?: number; json?: boolean }, cmd: Command) => {
      const status = await withApi(cmd, (feeds) =>
        feeds.add({
          name,
          sink: options.sink,
          types: options.types ?? null,
          sources: options.sources ?? null,
          secret: options.secret ?? null,
          ...(options.secretEnv !== undefined ? { secretEnv: options.secretEnv } : {}),
          ...(options.batch !== undefined ? { batch: options.batch } : {}),
        }),
      );
      print(options.json, status, `feed ${status.name} added: a running forgesync serve delivers it (its first run is a full sync)`);
    });
}

/** `feed list` and `feed status`. */
function readCommands(command: Command, withApi: WithApi<FeedsApi>): void {
  command
    .command('list')
    .description('list feeds with their lag and last run')
    .option('--json', 'machine-readable output')
    .action(async (options: { json?: boolean }, cmd: Command) => {
      const statuses = await withApi(cmd, (feeds) => feeds.list());
      if (options.json) printJson(statuses);
      else if (statuses.length === 0) process.stdout.write('no feeds; add one with: forgesync feed add <name> --sink <url>\n');
      else for (const status of statuses) process.stdout.write(`${statusLine(status)}\n`);
    });

  command
    .command('status')
    .description('show a feed: cursor, lag, last run, holder, skips, retries, dead letters, full sync')
    .argument('<name>')
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { json?: boolean }, cmd: Command) => {
      const status = await withApi(cmd, (feeds) => feeds.status(name));
      print(options.json, status);
      if (!options.json && status.lastError) process.stdout.write(`  last error: ${status.lastError}\n`);
    });
}

/** `feed sync|resync|pause|resume|replay`: what a feed does next. */
function runCommands(command: Command, withApi: WithApi<FeedsApi>): void {
  for (const [action, description] of [
    ['sync', 'partial sync: deliver the changes since the cursor'],
    ['resync', 'full sync: deliver the current state of everything in scope, then carry on with changes'],
  ] as const) {
    command
      .command(action)
      .description(description)
      .argument('<name>')
      .option('--wait', 'run it here (waiting out another holder) and print the status after it')
      .option('--json', 'machine-readable output')
      .action(async (name: string, options: { wait?: boolean; json?: boolean }, cmd: Command) => {
        const status = await withApi(cmd, (feeds) => (action === 'sync' ? feeds.sync(name, { wait: Boolean(options.wait) }) : feeds.resync(name, { wait: Boolean(options.wait) })), options.wait ? { logLevel: 'info' } : {});
        print(options.json, status, options.wait ? undefined : `${action === 'sync' ? 'partial' : 'full'} sync of feed ${name} requested; a running forgesync serve runs it (or use --wait)`);
      });
  }

  for (const action of ['pause', 'resume'] as const) {
    command
      .command(action)
      .description(action === 'pause' ? 'stop delivering (changes are kept; lag grows)' : 'deliver again (also re-enables a sink that answered 410 Gone)')
      .argument('<name>')
      .option('--json', 'machine-readable output')
      .action(async (name: string, options: { json?: boolean }, cmd: Command) => {
        const status = await withApi(cmd, (feeds) => (action === 'pause' ? feeds.pause(name) : feeds.resume(name)));
        print(options.json, status, `feed ${name} ${action === 'pause' ? 'paused' : 'resumed'}`);
      });
  }

  command
    .command('replay')
    .description('deliver again every change in scope from a sequence number on')
    .argument('<name>')
    .addOption(option('--from-seq <n>', 'the first change to deliver again', wholeNumber({ min: 1 })).makeOptionMandatory())
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { fromSeq: number; json?: boolean }, cmd: Command) => {
      const status = await withApi(cmd, (feeds) => feeds.replay(name, options.fromSeq));
      print(options.json, status, `feed ${name} replays from change ${options.fromSeq}`);
    });
}

/** `feed dead-letters` and `feed remove`. */
function deadLetterAndRemoveCommands(command: Command, withApi: WithApi<FeedsApi>): void {
  command
    .command('dead-letters')
    .description('list the changes that failed too often (with their last error); --retry sends them again')
    .argument('<name>')
    .option('--retry', 'send them again, in order')
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { retry?: boolean; json?: boolean }, cmd: Command) => {
      await withApi(cmd, async (feeds) => {
        const letters = await feeds.deadLetters(name);
        const retried = options.retry ? await feeds.retryDeadLetters(name) : 0;
        if (options.json) printJson(options.retry ? { retried, deadLetters: letters } : letters);
        else {
          for (const letter of letters) process.stdout.write(`${letter.seq}\t${letter.type ?? '?'}\t${letter.subject ?? ''}\t${letter.attempts} attempts\t${letter.lastError ?? ''}\n`);
          if (letters.length === 0) process.stdout.write(`feed ${name} has no dead letters\n`);
          if (options.retry) process.stdout.write(`${retried} sent again\n`);
        }
      });
    });

  command
    .command('remove')
    .description('remove a feed (the change log stays)')
    .argument('<name>')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      await withApi(cmd, (feeds) => feeds.remove(name));
      process.stdout.write(`feed ${name} removed\n`);
    });
}
