import { validateSourceName } from '../replication/api.js';
import type { EgressPolicy } from '../egress/policy.js';
import { InvalidImportInputError } from './errors.js';

export const DEFAULT_API_URL = 'https://api.github.com';

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;

/** `owner/repo` as GitHub spells them. @throws InvalidImportInputError */
export function parseProject(project: string): { owner: string; repo: string } {
  const match = /^([^/]+)\/([^/]+)$/.exec(typeof project === 'string' ? project.trim() : '');
  const owner = match?.[1] ?? '';
  const repo = (match?.[2] ?? '').replace(/\.git$/i, '');
  if (!OWNER.test(owner) || !REPO.test(repo) || repo === '.' || repo === '..') {
    throw new InvalidImportInputError(`${JSON.stringify(String(project).slice(0, 120))} is not <owner>/<repo> (e.g. octocat/hello-world)`);
  }
  return { owner, repo };
}

/**
 * The import's name: also the name of its repository's git source (and
 * `<name>.wiki` of its wiki's), so the same rules. @throws InvalidImportInputError
 */
export function validateImportName(name: string): string {
  try {
    validateSourceName(name);
  } catch (error) {
    throw new InvalidImportInputError(`import ${(error as Error).message.replace(/^source /, '')}`);
  }
  if (/\.wiki$/i.test(name)) throw new InvalidImportInputError(`import name ${JSON.stringify(name)} must not end in .wiki (that name is its wiki's)`);
  return name;
}

/**
 * `--api-url`: https (http only when the configured protocols allow it),
 * no user, query or fragment, not a refused address; without a trailing
 * slash. @throws InvalidImportInputError; EgressRefusedError
 */
export function validateApiUrl(input: string, protocols: ReadonlySet<string>, policy: EgressPolicy): string {
  let url: URL;
  try {
    url = new URL(String(input).trim());
  } catch {
    throw new InvalidImportInputError(`--api-url ${JSON.stringify(String(input).slice(0, 120))} is not a URL (e.g. https://ghe.example.com/api/v3)`);
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (scheme !== 'https' && !(scheme === 'http' && protocols.has('http'))) {
    throw new InvalidImportInputError(`--api-url must be https://…${scheme === 'http' ? ' (http is allowed only when FORGESYNC_GIT_PROTOCOLS lists http)' : ''}`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new InvalidImportInputError('--api-url must not carry a user, password, query or fragment: tokens go through --credential');
  }
  policy.checkLiteral(url.hostname.replace(/^\[|\]$/g, ''));
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The requests an import may keep in flight (`--concurrency`, the API's `concurrency`). */
export const CONCURRENCY_LIMITS = { min: 1, max: 100 } as const;

/** `--concurrency`: 1 to 100. @throws InvalidImportInputError */
export function validateConcurrency(value: unknown): number {
  const number = typeof value === 'string' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < CONCURRENCY_LIMITS.min || number > CONCURRENCY_LIMITS.max) {
    throw new InvalidImportInputError(`--concurrency must be a whole number from 1 to 100, not ${JSON.stringify(String(value).slice(0, 40))}`);
  }
  return number;
}
