import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RefMap } from './refs.js';

/*
 * The view of a mirror that clones are served from: `<mirror>/forgesync-served`,
 * a bare repository that borrows the mirror's objects (its alternates point at
 * `../../objects`, relative, so it follows the mirror when the directory is
 * renamed) and keeps every ref in one `packed-refs` file, replaced by a rename.
 *
 * Why: even an atomic fetch writes a mirror's loose refs one file at a time,
 * so upload-pack reading the mirror itself during a sync could advertise some
 * refs moved and others not. A reader of the view sees the old file or the new
 * one, never a mix; and the view is written after the fetch, so every ref in
 * it names objects the mirror already has. Written by the sync, under the
 * source's lease; read by upload-pack only.
 */

const VIEW = 'forgesync-served';

/** Where the served view of `mirror` is. */
export function servedViewOf(mirror: string): string {
  return join(mirror, VIEW);
}

/** Whether `mirror` has a served view yet (a mirror synced before views existed gets one at its next sync). */
export function hasServedView(mirror: string): boolean {
  return existsSync(join(servedViewOf(mirror), 'packed-refs'));
}

/** Publishes `refs` and `head` (a ref name; the default branch when unknown) as the served view of `mirror`. */
export function publishServedView(mirror: string, refs: RefMap, head: string | undefined): void {
  const view = servedViewOf(mirror);
  if (!existsSync(join(view, 'objects', 'info', 'alternates'))) {
    mkdirSync(join(view, 'objects', 'info'), { recursive: true });
    mkdirSync(join(view, 'refs'), { recursive: true });
    writeFileSync(join(view, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = true\n');
    writeFileSync(join(view, 'objects', 'info', 'alternates'), '../../objects\n');
  }
  const lines = [...refs].filter(([name]) => name.startsWith('refs/')).map(([name, sha]) => `${sha} ${name}\n`);
  replaceFile(join(view, 'packed-refs'), lines.join(''));
  replaceFile(join(view, 'HEAD'), `ref: ${head ?? 'refs/heads/main'}\n`);
}

/** Writes `text` to a new file and renames it over `file`: readers see one or the other, whole. */
function replaceFile(file: string, text: string): void {
  const next = `${file}.next`;
  writeFileSync(next, text);
  renameSync(next, file);
}
