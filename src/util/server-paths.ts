import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** A directory of the server, and the placeholder answers name it by (e.g. `<mirrors>`). */
export interface ServerRoot {
  /** Unset roots (a setting without a value) are skipped. */
  path: string | undefined;
  shownAs: string;
}

/** Characters that continue a path component: a root followed or preceded by one is part of another name. */
const NAME_CHAR = String.raw`[\w.~%+-]`;

/**
 * Hides the server's own directories in texts shown over HTTP. Error texts
 * (git's command lines and stderr, file system errors) name the data
 * directory, the mirrors, the snapshots or a temporary clone; callers of
 * the API have no use for them and should not learn the server's layout.
 * Each root, as configured and as its real path (through symbolic links),
 * is replaced by its placeholder, the longest first, so that
 * `/var/lib/forgesync/mirrors/x.git` reads `<mirrors>/x.git`. What is stored
 * and logged keeps the full paths: only answers go through this.
 */
export class ServerPaths {
  readonly #pattern: RegExp | undefined;
  readonly #shownAs = new Map<string, string>();

  constructor(roots: readonly ServerRoot[]) {
    for (const { path, shownAs } of roots) {
      if (!path) continue;
      for (const form of new Set([resolve(path), realForm(resolve(path))])) {
        // The file system root (or a drive) would swallow every path: nothing of it to hide.
        if (dirname(form) === form || this.#shownAs.has(form)) continue;
        this.#shownAs.set(form, shownAs);
      }
    }
    const forms = [...this.#shownAs.keys()].sort((a, b) => b.length - a.length);
    this.#pattern = forms.length === 0 ? undefined : new RegExp(`(?<!${NAME_CHAR})(?:${forms.map(escapeRegExp).join('|')})(?!${NAME_CHAR})`, 'g');
  }

  /** `text` with every server directory replaced by its placeholder; null stays null. */
  hide(text: string): string;
  hide(text: string | null): string | null;
  hide(text: string | null): string | null {
    if (text === null || this.#pattern === undefined) return text;
    return text.replace(this.#pattern, (root) => this.#shownAs.get(root) ?? root);
  }
}

/** The real path of `path`, through symbolic links, also when it does not exist yet (as its nearest existing ancestor's). */
function realForm(path: string): string {
  const missing: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync.native(at), ...missing.reverse());
    } catch {
      if (dirname(at) === at) return path;
      missing.push(basename(at));
    }
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}
