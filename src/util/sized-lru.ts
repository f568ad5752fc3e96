/**
 * A map bounded by the bytes of what it holds, the least recently used
 * forgotten first: for caches of rendered answers, whose entries vary from
 * a few hundred bytes to megabytes, so that a count of entries bounds
 * nothing. A value larger than `maxEntryBytes` is not kept at all (one huge
 * answer would push out hundreds of small ones). `sizeOf` says what a value
 * weighs (its text's length is close enough).
 */
export class SizedLru<V> {
  readonly #entries = new Map<string, V>();
  #bytes = 0;

  constructor(private readonly limits: { maxBytes: number; maxEntryBytes: number; sizeOf: (value: V) => number }) {}

  /** The value kept under `key`, now the most recently used; undefined when none is. */
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    // A Map iterates in insertion order: moved to the end, it is the last to be forgotten.
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Keeps `value` under `key` (replacing what was there), then forgets the least recently used beyond the budget. */
  set(key: string, value: V): void {
    this.delete(key);
    const size = this.limits.sizeOf(value);
    if (size > this.limits.maxEntryBytes) return;
    this.#entries.set(key, value);
    this.#bytes += size;
    for (const [oldest, old] of this.#entries) {
      if (this.#bytes <= this.limits.maxBytes) break;
      this.delete(oldest);
    }
  }

  /** Forgets what is kept under `key`, if anything. */
  delete(key: string): void {
    const old = this.#entries.get(key);
    if (old === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= this.limits.sizeOf(old);
  }
}
