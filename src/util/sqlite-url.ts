import { isAbsolute, resolve } from 'node:path';

/**
 * The file path in a `sqlite:` URL. Accepts `sqlite:relative/file.db`,
 * `sqlite:/abs/file.db`, `sqlite:///abs/file.db` and `sqlite::memory:`.
 */
export function sqliteFilePath(url: string): string {
  let path = url.replace(/^sqlite:/i, '');
  if (path.startsWith('///')) path = path.slice(2);
  else if (path.startsWith('//')) path = path.slice(2);
  if (path === '' ) throw new Error(`sqlite URL "${url}" names no file; use sqlite:<path to file>`);
  if (path === ':memory:') return path;
  return isAbsolute(path) ? path : resolve(path);
}
