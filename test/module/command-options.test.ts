import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  asWritten,
  duration,
  InvalidOptionError,
  option,
  parsedBy,
  secondsOrDuration,
  wholeBigInt,
  wholeNumber,
  type OptionParser,
} from '../../src/module/command-options.js';
import { parseRoles } from '../../src/cluster/roles.js';
import { InvalidInputError } from '../../src/errors.js';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { Upstream } from '../support/upstream.js';

/** The message `parse` refuses `text` with, given for `flag`; fails the test when it accepts it. */
function refusal<T>(parse: OptionParser<T>, text: string, flag = '--flag'): string {
  try {
    parse(text, flag);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ flag, value: text });
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(text)} was accepted`);
}

describe('InvalidOptionError', () => {
  it('is an input error naming the flag, the value (at most 40 characters) and what the flag accepts', () => {
    const error = new InvalidOptionError('--batch', 'many', 'a whole number of at least 1');
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ name: 'InvalidOptionError', flag: '--batch', value: 'many', accepted: 'a whole number of at least 1' });
    expect(error.message).toBe('--batch must be a whole number of at least 1, not "many"');
    expect(new InvalidOptionError('--x', 'y'.repeat(100), 'short').message).toBe(`--x must be short, not "${'y'.repeat(40)}"`);
  });
});

describe('wholeNumber', () => {
  it('takes digits within its bounds, blanks around them ignored', () => {
    const concurrency = wholeNumber({ min: 1, max: 100 });
    expect(concurrency('1', '--concurrency')).toBe(1);
    expect(concurrency(' 100 ', '--concurrency')).toBe(100);
    expect(wholeNumber({ min: 0, max: 65535 })('0', '--port')).toBe(0);
    expect(wholeNumber({ min: 1 })(String(Number.MAX_SAFE_INTEGER), '--from-seq')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses signs, fractions, exponents, hex, blanks and values out of bounds, saying the range', () => {
    const concurrency = wholeNumber({ min: 1, max: 100 });
    for (const text of ['', ' ', 'lots', '-1', '+5', '5.0', '1e1', '0x10', '0', '101', '5 6']) {
      expect(refusal(concurrency, text, '--concurrency')).toBe(`--concurrency must be a whole number from 1 to 100, not ${JSON.stringify(text)}`);
    }
    expect(refusal(wholeNumber({ min: 1 }), '9'.repeat(20), '--batch')).toBe(`--batch must be a whole number of at least 1, not "${'9'.repeat(20)}"`);
    expect(refusal(wholeNumber({ min: 1, unit: 'seconds' }), '0', '--timeout')).toBe('--timeout must be a whole number of seconds, at least 1, not "0"');
  });
});

describe('wholeBigInt', () => {
  it('takes whole numbers past 2^53 as bigints, refuses anything under its minimum or not digits', () => {
    const fence = wholeBigInt({ min: 1n });
    expect(fence('1', '--fence')).toBe(1n);
    expect(fence('18446744073709551616', '--fence')).toBe(18446744073709551616n);
    for (const text of ['0', '-1', '1.5', 'x', '']) {
      expect(refusal(fence, text, '--fence')).toBe(`--fence must be a whole number of at least 1, not ${JSON.stringify(text)}`);
    }
  });
});

describe('duration', () => {
  it('takes 250ms, 30s, 1h30m, 1d or plain milliseconds, from its minimum to a year', () => {
    const wait = duration();
    expect(wait('0', '--wait')).toBe(0);
    expect(wait('250', '--wait')).toBe(250);
    expect(wait('30s', '--wait')).toBe(30_000);
    expect(wait(' 1h30m ', '--wait')).toBe(5_400_000);
    expect(wait('365d', '--wait')).toBe(365 * 86_400_000);
    expect(duration({ min: 1 })('1ms', '--hold')).toBe(1);
  });

  it('refuses other text as "not a duration" (not a replication interval) and out-of-range values with the range', () => {
    for (const text of ['10x', 'soon', '-5s', '1.5h', '5 min', '']) {
      expect(refusal(duration(), text, '--wait')).toBe(`--wait must be a duration like 30s, 5m or 1h, not ${JSON.stringify(text)}`);
    }
    expect(refusal(duration(), '366d', '--wait')).toBe('--wait must be a duration of at most 365d, not "366d"');
    expect(refusal(duration({ min: 1 }), '0', '--hold')).toBe('--hold must be a duration from 1ms to 365d, not "0"');
    expect(refusal(duration({ min: 1000, max: 60_000 }), '2m', '--every')).toBe('--every must be a duration from 1s to 1m, not "2m"');
  });
});

describe('secondsOrDuration', () => {
  it('takes seconds (600, 2.5) or a duration with its unit (90s, 10m), in milliseconds', () => {
    const timeout = secondsOrDuration();
    expect(timeout('600', '--timeout')).toBe(600_000);
    expect(timeout('2.5', '--timeout')).toBe(2_500);
    expect(timeout('90s', '--timeout')).toBe(90_000);
    expect(timeout(' 1h30m ', '--timeout')).toBe(5_400_000);
  });

  it('refuses anything else with the message `sync --wait` and `import … --wait` have always given', () => {
    for (const text of ['', 'soon', '10x', '-5', '1e400', '5 min', '9'.repeat(30)]) {
      expect(refusal(secondsOrDuration(), text, '--timeout')).toBe(`--timeout must be a number of seconds (600) or a duration (90s, 10m), not ${JSON.stringify(text)}`);
    }
  });
});

describe('parsedBy', () => {
  it("returns what the module's parser returns, and refuses what it refuses in the words of every flag", () => {
    const roles = parsedBy(parseRoles, 'all, or a comma list of api, worker, scheduler');
    expect(roles('api,worker', '--role')).toEqual({ api: true, worker: true, scheduler: false });
    expect(roles('all', '--role')).toEqual({ api: true, worker: true, scheduler: true });
    for (const text of ['bogus', '', 'api,bogus']) {
      expect(refusal(roles, text, '--role')).toBe(`--role must be all, or a comma list of api, worker, scheduler, not ${JSON.stringify(text)}`);
    }
  });
});

describe('asWritten', () => {
  it('keeps the text beside the value, and refuses what the inner parser refuses', () => {
    expect(asWritten(duration())('1m30s', '--wait')).toEqual({ value: 90_000, text: '1m30s' });
    expect(refusal(asWritten(duration()), '10x', '--wait')).toBe('--wait must be a duration like 30s, 5m or 1h, not "10x"');
  });
});

describe('option', () => {
  /** A command with one parsed option, whose parse errors are thrown rather than exiting. */
  function program(...options: ReturnType<typeof option>[]): Command {
    const command = new Command('probe').exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
    for (const added of options) command.addOption(added);
    return command;
  }

  it('gives the action the parsed value, the default parsed too and shown in --help as typed', () => {
    const command = program(option('--timeout <seconds>', 'give up after this long', secondsOrDuration(), '600'), option('--batch <n>', 'events per file', wholeNumber({ min: 1 })));
    expect(command.parse(['node', 'probe'], { from: 'node' }).opts()).toEqual({ timeout: 600_000 });
    expect(command.parse(['node', 'probe', '--timeout', '90s', '--batch', '5'], { from: 'node' }).opts()).toEqual({ timeout: 90_000, batch: 5 });
    expect(command.helpInformation()).toContain('(default: "600")');
  });

  it('refuses a bad value while argv is parsed, before any action runs, naming the long flag', () => {
    let ran = false;
    const command = program(option('-b, --batch <n>', 'events per file', wholeNumber({ min: 1 }))).action(() => {
      ran = true;
    });
    expect(() => command.parse(['node', 'probe', '-b', '0'], { from: 'node' })).toThrow(new InvalidOptionError('--batch', '0', 'a whole number of at least 1'));
    expect(ran).toBe(false);
  });

  it('refuses a default its own parser refuses when the command is built', () => {
    expect(() => option('--wait <duration>', 'how long', duration(), 'soon')).toThrow(InvalidOptionError);
  });
});

// ---------------------------------------------------------------- the CLI (bin/forgesync.js, built by `npm run build`)

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const run = promisify(execFile);

/** Runs the CLI; resolves with exit code and output (never rejects on a non-zero exit; a command that hangs is killed). */
async function forgesync(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, FORGESYNC_DATA_DIR: dataDir, FORGESYNC_GIT_PROTOCOLS: 'https,ssh,file', FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS };
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('forgesync with a bad option value', () => {
  it('exits 1 with `forgesync: <flag> must be …` and opens nothing: the data directory stays empty', async () => {
    const cases: [string[], string][] = [
      [['sync', 'demo', '--wait', '--timeout', '10x'], '--timeout must be a number of seconds (600) or a duration (90s, 10m), not "10x"'],
      [['import', 'sync', 'demo', '--timeout', 'soon'], '--timeout must be a number of seconds (600) or a duration (90s, 10m), not "soon"'],
      [['snapshot', 'demo', '--ref', 'main', '--wait', '10x'], '--wait must be a duration like 30s, 5m or 1h, not "10x"'],
      [['snapshot', 'create', 'demo', '--ref', 'main', '--hold', '0'], '--hold must be a duration from 1ms to 365d, not "0"'],
      [['import', 'github', 'octo/demo', '--concurrency', '0'], '--concurrency must be a whole number from 1 to 100, not "0"'],
      [['feed', 'add', 'f', '--sink', 'file:///tmp/f', '--batch', 'many'], '--batch must be a whole number of at least 1, not "many"'],
      [['feed', 'replay', 'f', '--from-seq', '1.5'], '--from-seq must be a whole number of at least 1, not "1.5"'],
      [['shard', 'drain', 's1', '--wait', '--timeout', '0'], '--timeout must be a whole number of seconds, at least 1, not "0"'],
      [['serve', '--port', '70000'], '--port must be a whole number from 0 to 65535, not "70000"'],
      [['serve', '--role', 'bogus'], '--role must be all, or a comma list of api, worker, scheduler, not "bogus"'],
      [['lease', 'release', 'k', '--force', '--fence', '0'], '--fence must be a whole number of at least 1, not "0"'],
    ];
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-options-'));
    const results = await Promise.all(cases.map(([args]) => forgesync(dataDir, ...args)));
    cases.forEach(([args, message], index) => {
      const result = results[index]!;
      expect({ args, code: result.code, stderr: result.stderr, stdout: result.stdout }).toEqual({ args, code: 1, stderr: `forgesync: ${message}\n`, stdout: '' });
    });
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('refuses a bad --timeout of sync --wait before requesting anything; a good one still syncs', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-options-'));
    const upstream = Upstream.create();
    expect((await forgesync(dataDir, 'add', upstream.bare, '--name', 'demo')).code).toBe(0);
    const before = JSON.parse((await forgesync(dataDir, 'status', 'demo', '--json')).stdout);

    const refused = await forgesync(dataDir, 'sync', 'demo', '--wait', '--timeout', 'soon');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('forgesync: --timeout must be a number of seconds (600) or a duration (90s, 10m), not "soon"\n');
    const after = JSON.parse((await forgesync(dataDir, 'status', 'demo', '--json')).stdout);
    expect(after).toEqual(before);

    const synced = await forgesync(dataDir, 'sync', 'demo', '--wait', '--timeout', '2m', '--json');
    expect(synced.code, synced.stderr).toBe(0);
    expect(JSON.parse(synced.stdout)).toMatchObject({ name: 'demo', state: 'synced' });
  });
});
