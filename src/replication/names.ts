import { InvalidInputError } from '../errors.js';

/** A source name is not acceptable. */
export class InvalidSourceNameError extends InvalidInputError {}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Source names: 1–100 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit, never `..`. */
export function validateSourceName(name: string): string {
  if (!NAME.test(name) || name.includes('..')) {
    throw new InvalidSourceNameError(
      `source name ${JSON.stringify(name.slice(0, 60))} is not valid: use 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit, without ".."`,
    );
  }
  return name;
}

/** The default name of a source: the last path segment of its URL, without `.git`. */
export function nameFromUrl(url: string): string {
  const last = url.replace(/[/\\]+$/, '').split(/[/:\\]/).pop() ?? '';
  const name = last.replace(/\.git$/i, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/\.{2,}/g, '.').replace(/^[._-]+/, '').slice(0, 100);
  return name || 'repository';
}
