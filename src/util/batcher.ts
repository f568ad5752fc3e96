/** One call waiting for its batch. */
interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export interface BatcherOptions {
  /** Items in one batch at most. */
  maxBatch: number;
  /** Batches in flight at once (default 1). */
  concurrency?: number;
}

/**
 * Group commit for concurrent calls: a batch starts as soon as a slot is
 * free, at the end of the current turn of the event loop (setImmediate), so
 * the calls made in that turn (every request whose body arrived in one read
 * of the sockets) go together; calls made while the slots are busy wait and
 * go in the next batch. Under load the batches grow by themselves, so a
 * database round trip and commit are paid per batch, not per call. `run`
 * answers every item of a batch in order; when it throws, every call of that
 * batch rejects with its error.
 */
export class Batcher<I, O> {
  readonly #waiting: Waiting<I, O>[] = [];
  #running = 0;
  #scheduled = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: BatcherOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#running >= (this.options.concurrency ?? 1)) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#running < (this.options.concurrency ?? 1) && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.options.maxBatch);
      this.#running++;
      this.run(batch.map((entry) => entry.item))
        .then(
          (results) => batch.forEach((entry, index) => entry.resolve(results[index]!)),
          (error: unknown) => batch.forEach((entry) => entry.reject(error)),
        )
        .finally(() => {
          this.#running--;
          this.#schedule();
        });
    }
  }
}
