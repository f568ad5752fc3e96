import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Runs Debian's gh CLI (installed by scripts/ensure-clients.mjs) as a user
 * would, against one GH_HOST: no shell, a timeout, and an environment of its
 * own — a temp HOME and config directory (so nothing of the machine's gh
 * setup is read or written), the token in GH_ENTERPRISE_TOKEN (gh's variable
 * for a non-github.com host; never an argument), no update check, no
 * prompts, no pager, no colour, and the front's CA as SSL_CERT_FILE (Go
 * trusts exactly that file then). Non-zero exits are returned, not thrown,
 * so a test can show what gh printed.
 */

export const GH = '/usr/bin/gh';

export interface GhTarget {
  /** `127.0.0.1:<port>` of the TLS front (see gh-front.ts). */
  host: string;
  /** The token gh sends (`Authorization: token …`). */
  token: string;
  /** The CA certificate file gh must trust (the front's). */
  caFile: string;
}

export interface GhRun {
  /** gh's exit code (null when it was killed by the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Fails with the install command when gh is missing (the suite installs it through npm test). */
export function requireGh(): void {
  if (!existsSync(GH)) throw new Error(`${GH} is not installed: run node scripts/ensure-clients.mjs (apt-get install gh)`);
}

/**
 * A fresh home for gh: HOME, XDG_CONFIG_HOME, GH_CONFIG_DIR and TMPDIR below
 * one temp directory. TMPDIR too: gh keeps its feature-detection answers
 * (`__type` queries) for 24 h in `$TMPDIR/gh-cli-cache`, so a run sharing the
 * machine's would skip requests an earlier run made.
 */
function ghHome(): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'forgesync-gh-'));
  const config = join(dir, 'config');
  mkdirSync(join(config, 'gh'), { recursive: true });
  mkdirSync(join(dir, 'tmp'));
  return { dir, env: { HOME: dir, XDG_CONFIG_HOME: config, GH_CONFIG_DIR: join(config, 'gh'), TMPDIR: join(dir, 'tmp') } };
}

/**
 * Runs `gh <args>` against `target`; resolves with its exit code and output
 * whatever the code (after `timeoutMs`, default 45 s — below a test's 60 s, so gh's
 * own output is what a hung run reports — it is killed: code null).
 */
export async function runGh(args: readonly string[], target: GhTarget, options: { timeoutMs?: number } = {}): Promise<GhRun> {
  const home = ghHome();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...home.env,
    GH_HOST: target.host,
    GH_ENTERPRISE_TOKEN: target.token,
    GH_NO_UPDATE_NOTIFIER: '1',
    GH_PROMPT_DISABLED: '1',
    GH_PAGER: 'cat',
    NO_COLOR: '1',
    CLICOLOR: '0',
    TERM: 'dumb',
    SSL_CERT_FILE: target.caFile,
  };
  try {
    return await new Promise<GhRun>((resolve, reject) => {
      execFile(GH, [...args], { env, timeout: options.timeoutMs ?? 45_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number' && !error.killed) {
          reject(new Error(`gh could not be run: ${error.message}`));
          return;
        }
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      });
    });
  } finally {
    rmSync(home.dir, { recursive: true, force: true });
  }
}

/** `owner/repo` as gh's `-R` wants it on an enterprise host: `<host>/owner/repo`. */
export function ghRepo(target: Pick<GhTarget, 'host'>, project: string): string {
  return `${target.host}/${project}`;
}
