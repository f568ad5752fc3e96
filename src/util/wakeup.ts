/**
 * A pause another part can cut short: `wait(ms)` resolves after `ms`, or as
 * soon as `wake()` is called, whichever comes first (a wake with nobody
 * waiting is kept for the next wait, so one that comes just before the wait
 * begins is not lost). For a loop that polls for work and wants to hear of
 * new work at once when it comes from its own process.
 */
export class Wakeup {
  #woken = false;
  #resolve: (() => void) | undefined;

  wait(ms: number): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.#resolve = undefined;
        resolve();
      }
      this.#resolve = done;
    });
  }

  wake(): void {
    if (this.#resolve) this.#resolve();
    else this.#woken = true;
  }
}
