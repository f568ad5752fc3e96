/**
 * A notification between parts that must not know each other: whoever
 * notifies does not wait for, or hear from, those listening (a listener
 * that throws is its own affair: it is isolated so the others still run).
 * Used where one module tells another that something happened
 * ("changes were recorded", "a mirror was removed") without a cycle
 * between them.
 */
export class Signal<T = void> {
  readonly #listeners = new Set<(value: T) => void>();

  /** Calls `listener` on every notification from now on; the returned function stops that. */
  listen(listener: (value: T) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  notify(value: T): void {
    for (const listener of this.#listeners) {
      try {
        listener(value);
      } catch {
        // A listener's failure is not the notifier's: the others still hear of it.
      }
    }
  }
}
