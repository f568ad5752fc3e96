/**
 * TEST ONLY: the hook of the crash-at-every-commit test
 * (test/importer/crash-every-commit.test.ts). With the environment variable
 * FORGESYNC_TEST_KILL_AFTER_COMMITS=n, this process SIGKILLs itself right
 * after the n-th durable write of an import it makes — a batch a run or a
 * per-object job committed, the job rows of a fan-out stage — so that a
 * crash lands exactly there, and the test resumes the import in another
 * process. Read once, when the module loads: unset (always, outside that
 * test) `afterImportWrite` is a function that does nothing. It is no
 * setting: no configuration file, API or CLI option reaches it, only the
 * environment a process is started with.
 */

const ENV = 'FORGESYNC_TEST_KILL_AFTER_COMMITS';

function killAfterOf(value: string | undefined): number | null {
  if (value === undefined || value === '') return null;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${ENV} (a test hook) must be a whole number from 1, not "${value}"; leave it unset`);
  return n;
}

const killAfter = killAfterOf(process.env[ENV]);
let writes = 0;

/** Called right after each durable write of an import (see above). */
export const afterImportWrite: () => void =
  killAfter === null
    ? () => undefined
    : () => {
        if (++writes === killAfter) process.kill(process.pid, 'SIGKILL');
      };
