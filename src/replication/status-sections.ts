import type { SourceWithRegistry } from '../store/types.js';

/**
 * A part of each source's `status --json` that its owner reports under
 * `name` (replication's housekeeping, the lfs module's objects): modules that
 * replication cannot import add to the status this way. Contract: `describe`
 * answers for many sources at once (one query, not one per source); a
 * source missing from its map is shown as `null`.
 */
export interface SourceStatusSection {
  readonly name: string;
  describe(sources: readonly SourceWithRegistry[]): Promise<ReadonlyMap<number, unknown>>;
}

/** The sections registered in this process, in the order they were added. */
export class SourceStatusSections {
  readonly #sections = new Set<SourceStatusSection>();

  /** Adds `section`; the returned function removes it. */
  add(section: SourceStatusSection): () => void {
    this.#sections.add(section);
    return () => this.#sections.delete(section);
  }

  /** Every section's part of each source, by source id: `{ <section name>: value or null }`. */
  async describe(sources: readonly SourceWithRegistry[]): Promise<Map<number, Record<string, unknown>>> {
    const sections = [...this.#sections];
    const answers = await Promise.all(sections.map((section) => section.describe(sources)));
    return new Map(sources.map((source) => [source.id, Object.fromEntries(sections.map((section, index) => [section.name, answers[index]!.get(source.id) ?? null]))]));
  }
}
