import type { Registry } from 'prom-client';
import type { GitRunner } from '../../git/runner.js';
import type { Logger } from '../../logging/logger.js';
import type { OpenPackCache, PackCacheSettings } from './open.js';

/**
 * The pack cache of a module instance, opened by the first caller that
 * serves fetches (a CLI command never opens it: no socket, no directory)
 * and shared by every later one. `maxBytes` 0 turns it off; a cache that
 * cannot be opened is logged and left off, so fetches still work, each with
 * a pack-objects of its own.
 */
export class LazyPackCache {
  #opening: Promise<OpenPackCache | undefined> | undefined;

  constructor(
    private readonly settings: PackCacheSettings,
    private readonly services: { runner: GitRunner; metrics: Registry; logger: Logger },
  ) {}

  /** The hook fetches are served through, and whole clones' answers; undefined when the cache is off. */
  async open(): Promise<Pick<OpenPackCache, 'hook' | 'responses'> | undefined> {
    this.#opening ??= this.#open();
    return this.#opening;
  }

  async close(): Promise<void> {
    await (await this.#opening)?.close();
  }

  async #open(): Promise<OpenPackCache | undefined> {
    if (this.settings.maxBytes === 0) return undefined;
    try {
      const { openPackCache } = await import('./open.js');
      return await openPackCache(this.settings, this.services);
    } catch (error) {
      this.services.logger.warn({ event: 'pack_cache_unavailable', err: String(error) }, 'the pack cache could not be opened: every fetch runs its own pack-objects');
      return undefined;
    }
  }
}
