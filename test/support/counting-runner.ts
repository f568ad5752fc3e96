import { vi } from 'vitest';
import { GitRunner } from '../../src/git/runner.js';
import { loopbackEgress } from './egress.js';

/**
 * A runner for `protocols` (local repositories by default), loopback allowed,
 * that records the argv of every git process it starts.
 */
export function countingRunner(protocols: ReadonlySet<string> = new Set(['file'])): { runner: GitRunner; calls: string[][] } {
  const runner = new GitRunner({ protocols, egress: loopbackEgress() });
  const calls: string[][] = [];
  const run = runner.run.bind(runner);
  vi.spyOn(runner, 'run').mockImplementation((args, options) => {
    calls.push(args);
    return run(args, options);
  });
  return { runner, calls };
}
