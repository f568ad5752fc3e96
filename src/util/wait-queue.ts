/**
 * Waiters in arrival order, for anything that hands out places (a
 * semaphore, an adaptive limit): `wait` queues the caller until `wakeFirst`
 * reaches it, and a waiter whose signal aborts leaves the queue (and its
 * listener leaves the signal), so an aborted job holds nothing.
 */
export class WaitQueue {
  readonly #waiting: (() => void)[] = [];

  get length(): number {
    return this.#waiting.length;
  }

  /**
   * Waits for this caller's turn; `onTurn` runs at once when it comes (before
   * anyone else is woken: the place is taken there), and the promise
   * resolves with what it returns.
   * @throws the signal's reason when it aborts while waiting (out of the queue, nothing taken).
   */
  wait<T>(onTurn: () => T, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(onTurn());
      };
      const onAbort = (): void => {
        const index = this.#waiting.indexOf(wake);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(wake);
    });
  }

  /** Gives the first waiter its turn; false when nobody waits. */
  wakeFirst(): boolean {
    const first = this.#waiting.shift();
    first?.();
    return first !== undefined;
  }
}
