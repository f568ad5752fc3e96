/**
 * Loads values by key in batches: the keys asked for while one level of a
 * query resolves (every author of a page of issues) are fetched with one
 * statement, once the current turn of the event loop is over. Per
 * request; results are kept for the rest of it.
 */
export class BatchLoader<K, V> {
  readonly #cache = new Map<K, Promise<V | undefined>>();
  #pending: { key: K; resolve: (value: V | undefined) => void; reject: (error: unknown) => void }[] = [];

  constructor(private readonly fetch: (keys: K[]) => Promise<Map<K, V>>) {}

  load(key: K): Promise<V | undefined> {
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const promise = new Promise<V | undefined>((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => void this.#dispatch());
      this.#pending.push({ key, resolve, reject });
    });
    this.#cache.set(key, promise);
    return promise;
  }

  async #dispatch(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    try {
      const found = await this.fetch(batch.map((entry) => entry.key));
      for (const entry of batch) entry.resolve(found.get(entry.key));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
