import { API } from './github-api-fixtures.js';

/**
 * `object` as the copy at `copyBase` (`<origin>/github`) answers it: every
 * github.com API URL (a string that starts with it) moved below the copy.
 * Independent of the server's own rewriting, on purpose.
 */
export function onCopy<T>(object: T, copyBase: string): T {
  return JSON.parse(JSON.stringify(object).replaceAll(`"${API}/`, `"${copyBase}/`)) as T;
}
