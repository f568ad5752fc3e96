import { lstat, mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { FileSinkOutsideRootError } from './errors.js';
import { fileDirectoryOf, redactSinkUrl } from './url.js';

/**
 * File sinks write only inside the feed file root the operator set
 * (FORGESYNC_FEED_FILE_ROOT): a feed's URL names an absolute directory, and
 * both its path as written and the real path of every part of it that exists
 * must be inside the root, so neither `..` nor a symbolic link (at any
 * component) leads out. The root itself is the operator's choice and may be
 * a symbolic link.
 */

/** Whether `path` is `root` or below it (both absolute and normalised). */
function inside(root: string, path: string): boolean {
  const rest = relative(root, path);
  return rest === '' || (rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest));
}

/**
 * The directory of file sink `url`, checked by its path as written (no disk
 * access): inside `root`.
 * @throws UnsupportedSinkUrlError (FileSinkOutsideRootError when outside the root)
 */
export function fileSinkDirectory(url: URL, root: string): string {
  const directory = resolve(fileDirectoryOf(url));
  if (!inside(resolve(root), directory)) throw new FileSinkOutsideRootError(redactSinkUrl(url.href).slice(0, 200), resolve(root));
  return directory;
}

/**
 * Checks on disk, when a feed is added, that `directory` (inside `root` as
 * written, see fileSinkDirectory) really is inside the root: the real path of
 * each existing component stays inside the real root. What does not exist
 * yet is checked when it is made (openDirectoryInRoot).
 * @throws FileSinkOutsideRootError; the file system's error when a component cannot be read.
 */
export async function checkDirectoryInRoot(directory: string, root: string, shownUrl: string): Promise<void> {
  await walk(directory, root, { create: false, shownUrl });
}

/**
 * Before each write: makes the root and the missing components of
 * `directory`, one at a time (a component that appears meanwhile is checked
 * like any other), checks each as checkDirectoryInRoot does, and returns the
 * real path of the directory: the sink writes there, through no symbolic link.
 * @throws FileSinkOutsideRootError; the file system's error when a component cannot be read or made.
 */
export async function openDirectoryInRoot(directory: string, root: string, shownUrl: string): Promise<string> {
  return (await walk(directory, root, { create: true, shownUrl }))!;
}

/** Walks from the real root down to `directory`; undefined when, without `create`, a component is missing. */
async function walk(directory: string, root: string, options: { create: boolean; shownUrl: string }): Promise<string | undefined> {
  const outside = () => new FileSinkOutsideRootError(options.shownUrl, resolve(root));
  if (options.create) await mkdir(root, { recursive: true });
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (error) {
    // No root yet: nothing under it can lead out; it is made before the first write.
    if (!options.create && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let real = realRoot;
  for (const part of relative(resolve(root), resolve(directory)).split(sep).filter((part) => part !== '')) {
    const next = join(real, part);
    if (!(await exists(next))) {
      if (!options.create) return undefined;
      await mkdir(next).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
    }
    // A dangling symbolic link has no real path: refused like one leading out.
    const resolved = await realpath(next).catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' ? outside() : error;
    });
    if (!inside(realRoot, resolved)) throw outside();
    real = resolved;
  }
  return real;
}

/** Whether `path` exists (a dangling symbolic link does); under a file it does not (making it then fails, when written to). */
async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}
