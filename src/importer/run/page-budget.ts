import type { BodyMeter } from '../../egress/body.js';
import { MAX_ANSWER_BYTES } from '../github/client.js';

/** What the pages of a run's list walks hold together at most, being read or waiting to be stored. */
export const WALK_BYTES = 16 * 2 ** 20;

/**
 * The memory a run's list walks may hold in pages: the bytes of every page
 * being read or read and not yet stored, counted as they arrive (never from
 * what an answer claims). Past `sharedBytes` a page stops reading until
 * stored pages free room — except the oldest page being read, when no page
 * waits to be stored: it reads on, up to the answer cap, so the walks always
 * move (nothing else can free room then) and the total stays within
 * `sharedBytes` + MAX_ANSWER_BYTES = WALK_BYTES, plus the last chunk each
 * paused page read (64 KiB at most). A new page is asked for only while the
 * bytes held and those the pages in flight are expected to bring fit.
 */
export class PageBudget {
  #used = 0;
  #peak = 0;
  /** Pages read whole and not yet stored (released). */
  #unstored = 0;
  /** Every open hold, oldest first. */
  readonly #holds = new Set<PageHold>();
  readonly #paused = new Map<PageHold, () => void>();
  /** The page reading past the shared bytes, until it is read whole or gives up (one at a time, or the total could grow by a page each time). */
  #exempt: PageHold | undefined;
  readonly #admissions: Admission[] = [];

  constructor(readonly sharedBytes = WALK_BYTES - MAX_ANSWER_BYTES) {}

  /** The bytes held now. */
  get used(): number {
    return this.#used;
  }

  /** The most bytes held at once so far. */
  get peak(): number {
    return this.#peak;
  }

  /**
   * A hold for one page, once it may be asked for: nothing is held, or the
   * bytes held plus `expected` for each page being read (this one included)
   * fit in `sharedBytes`. Holds are given in the order they were asked for.
   * No abort signal is needed: a wait ends when the holds before it are
   * released, which every path does (a run's abort fails their requests).
   */
  open(options: { expected?: number } = {}): Promise<PageHold> {
    return new Promise((admit) => {
      this.#admissions.push({ expected: Math.max(0, options.expected ?? 0), admit });
      this.#wake();
    });
  }

  /** @internal PageHold's */
  add(hold: PageHold, bytes: number): Promise<void> | undefined {
    // Bytes of a page already given up are not kept by anyone.
    if (hold.state === 'released') return undefined;
    this.#used += bytes;
    hold.bytes += bytes;
    if (this.#used > this.#peak) this.#peak = this.#used;
    if (this.#mayRead(hold)) return undefined;
    return new Promise((resume) => this.#paused.set(hold, resume));
  }

  /** @internal PageHold's */
  drop(hold: PageHold, bytes: number): void {
    const dropped = Math.min(bytes, hold.bytes);
    hold.bytes -= dropped;
    this.#used -= dropped;
    // A page with nothing left (its request failed) may wait long for its next try: it is no longer the one that must read.
    if (hold.bytes === 0 && this.#exempt === hold) this.#exempt = undefined;
    this.#wake();
  }

  /** @internal PageHold's */
  read(hold: PageHold): void {
    if (hold.state !== 'reading') return;
    hold.state = 'read';
    this.#unstored += 1;
    if (this.#exempt === hold) this.#exempt = undefined;
    this.#wake();
  }

  /** @internal PageHold's */
  release(hold: PageHold): void {
    if (hold.state === 'released') return;
    if (hold.state === 'read') this.#unstored -= 1;
    hold.state = 'released';
    this.#used -= hold.bytes;
    hold.bytes = 0;
    this.#holds.delete(hold);
    if (this.#exempt === hold) this.#exempt = undefined;
    // A page released while paused (its request failed) has nothing left to read.
    this.#paused.get(hold)?.();
    this.#paused.delete(hold);
    this.#wake();
  }

  /**
   * Whether `hold` may read on: within the shared bytes, or it is the one
   * page that must, for the walks to move — chosen when nothing waits to be
   * stored (stores will free room otherwise) as the oldest page with bytes
   * being read, and kept until it is read whole or gives up.
   */
  #mayRead(hold: PageHold): boolean {
    if (this.#used <= this.sharedBytes) return true;
    if (this.#exempt === undefined && this.#unstored === 0) this.#exempt = this.#oldestReading();
    return this.#exempt === hold;
  }

  /** The oldest page that has bytes and is still being read. */
  #oldestReading(): PageHold | undefined {
    for (const hold of this.#holds) if (hold.state === 'reading' && hold.bytes > 0) return hold;
    return undefined;
  }

  #wake(): void {
    for (const [hold, resume] of [...this.#paused]) {
      if (!this.#mayRead(hold)) continue;
      this.#paused.delete(hold);
      resume();
    }
    while (this.#admissions.length > 0) {
      const next = this.#admissions[0]!;
      if (this.#holds.size > 0 && this.#used + (this.#reading() + 1) * next.expected > this.sharedBytes) break;
      this.#admissions.shift();
      const hold = new PageHold(this);
      this.#holds.add(hold);
      next.admit(hold);
    }
  }

  #reading(): number {
    let reading = 0;
    for (const hold of this.#holds) if (hold.state === 'reading') reading += 1;
    return reading;
  }
}

interface Admission {
  expected: number;
  admit: (hold: PageHold) => void;
}

/**
 * One page's share of a PageBudget: the meter its answer is read through,
 * then, once read whole (`read`), what it holds until stored (`release`).
 * Release it on every path, failures included.
 */
export class PageHold implements BodyMeter {
  bytes = 0;
  state: 'reading' | 'read' | 'released' = 'reading';

  constructor(private readonly budget: PageBudget) {}

  add(bytes: number): Promise<void> | undefined {
    return this.budget.add(this, bytes);
  }

  drop(bytes: number): void {
    this.budget.drop(this, bytes);
  }

  /** The page was read whole: it now only waits to be stored. */
  read(): void {
    this.budget.read(this);
  }

  /** The page was stored, or given up: its bytes are free. */
  release(): void {
    this.budget.release(this);
  }
}
