import { Command } from 'commander';
import type { WithApi } from '../module/definition.js';
import type { ImporterApi } from './api.js';
import { printJson } from '../module/command-output.js';
import type { ImportStatusJson } from './status.js';
import type { CoordinatorOutcome } from './run/coordinator.js';
import { describeHolder } from '../leases/errors.js';
import { option, secondsOrDuration, wholeNumber } from '../module/command-options.js';
import { CONCURRENCY_LIMITS } from './names.js';

/** One line of an import's state for humans. */
function statusLine(status: ImportStatusJson): string {
  const imported = Object.entries(status.counts.imported).filter(([, n]) => n > 0).map(([type, n]) => `${type} ${n}`).join(', ');
  const failures = status.failures.length > 0 ? `  ${status.failures.length} failure(s)` : '';
  return `${status.name}\t${status.owner}/${status.repo}\t${status.state}\t${status.stage}\t${imported || 'nothing imported yet'}${failures}${status.failure ? `\t${status.failure}` : ''}`;
}

/** The terminal progress line: stage, fetched/imported per type, the rate budget and its reset. */
function progressLine(status: ImportStatusJson): string {
  const types = Object.entries(status.counts.fetched)
    .filter(([, n]) => n > 0)
    .map(([type, n]) => `${type} ${status.counts.imported[type as keyof typeof status.counts.imported]}/${n}`)
    .join(' ');
  const rate = status.rate
    .map((budget) => (budget.remaining !== null ? `${budget.credential ?? 'anonymous'} ${budget.remaining}/${budget.limit} until ${budget.resetAt?.slice(11, 19) ?? '?'}` : ''))
    .filter(Boolean)
    .join(', ');
  return `${status.name}: ${status.stage}  ${types}${rate ? `  rate ${rate}` : ''}`;
}

/**
 * Runs the import here until it ends (`--wait`), drawing progress on stderr
 * when it is a terminal; exit status 0 only when it ended synced. When
 * another process runs it, waits for that one first (until it finishes, or
 * its lease lapses when it died), up to `timeoutMs`.
 * @throws ImportWaitTimeoutError naming the holder when the timeout passed.
 */
async function runHere(importer: ImporterApi, name: string, options: { json: boolean; timeoutMs: number }): Promise<void> {
  const { json, timeoutMs } = options;
  const draw = process.stderr.isTTY && !json;
  const timer = draw
    ? setInterval(() => {
        void importer.status(name).then((status) => process.stderr.write(`\r\u001b[K${progressLine(status).slice(0, (process.stderr.columns || 120) - 1)}`), () => undefined);
      }, 500)
    : undefined;
  const stop = new AbortController();
  const onSignal = () => stop.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let outcome: CoordinatorOutcome;
  try {
    ({ outcome } = await importer.runHereWaiting(name, {
      timeoutMs,
      signal: stop.signal,
      onWait: (holder) => process.stderr.write(`another process ("${describeHolder(holder)}") is running import ${name}; waiting until it ends or its lease lapses (at most ${timeoutMs / 1000} s)\n`),
    }));
  } finally {
    clearInterval(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (draw) process.stderr.write('\r\u001b[K');
  }
  const status = await importer.status(name);
  if (json) printJson(status);
  else process.stdout.write(`${statusLine(status)}\n`);
  if (outcome === 'skipped') process.stderr.write(`another process is running import ${name}; see forgesync import status ${name}\n`);
  if (status.state !== 'synced' || outcome === 'skipped') process.exitCode = 1;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `--timeout`, as `forgesync sync --wait` has it: how long to wait for another process running the import, in ms. */
const timeoutOption = () =>
  option('--timeout <seconds>', 'with --wait: give up waiting for another process running the import after this many seconds (or a duration: 90s, 10m)', secondsOrDuration(), '600');

/** `forgesync import github|status|list|sync|resume|cancel|export`. */
export function importCommands(withApi: WithApi<ImporterApi>): Command[] {
  const command = new Command('import').description('import GitHub projects (issues, pull requests, reviews, …) and keep them up to date');
  githubCommand(command, withApi);
  readCommands(command, withApi);
  runCommands(command, withApi);
  exportCommand(command, withApi);
  return [command];
}

/** `import github`: record an import (and with --wait, run it here). */
function githubCommand(command: Command, withApi: WithApi<ImporterApi>): void {
  command
    .command('github')
    .description('import a GitHub (or GitHub Enterprise) project: repository and wiki, issues, pull requests, reviews, events, releases, …')
    .argument('<project>', 'owner/repo')
    .option('--name <name>', 'import name (default: the repository name); also the name of its git source')
    .option('--api-url <url>', 'API URL (GitHub Enterprise: https://host/api/v3)', 'https://api.github.com')
    .option('--credential <name>', 'a credential bound to the API host (repeat for several tokens, each with its own rate budget)', collect)
    // The range the importer checks again (validateConcurrency), for callers of its API.
    .addOption(option('--concurrency <n>', 'requests in flight at once (1: one after the other, for debugging)', wholeNumber(CONCURRENCY_LIMITS)))
    .option('--wait', 'run the import here until it ends (first waiting for another process running it); exit status 0 only if it succeeded')
    .addOption(timeoutOption())
    .option('--json', 'machine-readable output')
    .action(async (project: string, options: { name?: string; apiUrl: string; credential?: string[]; concurrency?: number; wait?: boolean; timeout: number; json?: boolean }, cmd: Command) => {
      await withApi(
        cmd,
        async (importer) => {
          const record = await importer.create({
            project,
            apiUrl: options.apiUrl,
            ...(options.name !== undefined ? { name: options.name } : {}),
            ...(options.credential ? { credentials: options.credential } : {}),
            ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
          });
          if (options.wait) return runHere(importer, record.name, { json: Boolean(options.json), timeoutMs: options.timeout });
          const status = await importer.status(record.name);
          if (options.json) printJson(status);
          else process.stdout.write(`import ${record.name} of ${record.owner}/${record.repo} recorded; a running forgesync serve runs it (or use --wait)\n`);
        },
        options.wait ? { logLevel: 'info' } : {},
      );
    });
}

/** `import status` and `import list`. */
function readCommands(command: Command, withApi: WithApi<ImporterApi>): void {
  command
    .command('status')
    .description('show an import: state, stage, counts per type, requests, failures, git sources')
    .argument('<name>')
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { json?: boolean }, cmd: Command) => {
      const status = await withApi(cmd, (importer) => importer.status(name));
      if (options.json) printJson(status);
      else {
        process.stdout.write(`${statusLine(status)}\n`);
        for (const failure of status.failures) process.stdout.write(`  ${failure.type} ${failure.id}: ${failure.error}\n`);
      }
    });

  command
    .command('list')
    .description('list imports')
    .option('--json', 'machine-readable output')
    .action(async (options: { json?: boolean }, cmd: Command) => {
      const statuses = await withApi(cmd, async (importer) => Promise.all((await importer.list()).map((record) => importer.status(record))));
      if (options.json) printJson(statuses);
      else if (statuses.length === 0) process.stdout.write('no imports; start one with: forgesync import github <owner>/<repo>\n');
      else for (const status of statuses) process.stdout.write(`${statusLine(status)}\n`);
    });
}

/** `import sync|resume|cancel`. */
function runCommands(command: Command, withApi: WithApi<ImporterApi>): void {
  for (const [action, description] of [
    ['sync', 'bring a finished import up to date (only what changed since the last run)'],
    ['resume', 'continue a failed, cancelled or interrupted import where it stopped'],
  ] as const) {
    command
      .command(action)
      .description(description)
      .argument('<name>')
      .option('--wait', 'run it here until it ends (first waiting for another process running it); exit status 0 only if it succeeded')
      .addOption(timeoutOption())
      .option('--json', 'machine-readable output')
      .action(async (name: string, options: { wait?: boolean; timeout: number; json?: boolean }, cmd: Command) => {
        await withApi(
          cmd,
          async (importer) => {
            const record = action === 'sync' ? await importer.requestSync(name) : await importer.resume(name);
            if (options.wait) return runHere(importer, record.name, { json: Boolean(options.json), timeoutMs: options.timeout });
            if (options.json) printJson(await importer.status(record.name));
            else process.stdout.write(`${action} of import ${record.name} requested; a running forgesync serve runs it (or use --wait)\n`);
          },
          options.wait ? { logLevel: 'info' } : {},
        );
      });
  }

  command
    .command('cancel')
    .description('cancel an import (its coordinator and jobs stop at their next write; resume continues it)')
    .argument('<name>')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      await withApi(cmd, (importer) => importer.cancel(name));
      process.stdout.write(`import ${name} cancelled\n`);
    });
}

/** `import export`. */
function exportCommand(command: Command, withApi: WithApi<ImporterApi>): void {
  command
    .command('export')
    .description('write an import as a GitHub migration archive (schema.json, issues_000001.json, …, repositories/<owner>/<repo>.git)')
    .argument('<name>')
    .requiredOption('--to <dir>', 'the archive directory (must not exist, or be empty)')
    .option('--json', 'machine-readable output')
    .action(async (name: string, options: { to: string; json?: boolean }, cmd: Command) => {
      const summary = await withApi(cmd, (importer) => importer.export(name, options.to));
      if (options.json) printJson(summary);
      else process.stdout.write(`exported ${name} to ${summary.dir}\n`);
    });
}
