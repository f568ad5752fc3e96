/**
 * Primary rate-limit windows per token (index into the configured tokens; -1 is
 * anonymous), as GitHub keeps them: a window starts at the first counted
 * request and resets `windowMs` later; until then `reset` is "an hour from now".
 */

export interface RateState {
  limit: number;
  used: number;
  remaining: number;
  /** Epoch seconds. */
  reset: number;
  /** Epoch milliseconds of the reset. */
  resetAtMs: number;
}

interface Window {
  used: number;
  resetAt: number | null;
}

export class RateLimiter {
  private readonly windows = new Map<number, Window>();

  constructor(private readonly options: { limit: number | number[]; anonLimit: number; windowMs: number; now?: () => number }) {}

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  limitOf(key: number): number {
    if (key < 0) return this.options.anonLimit;
    const { limit } = this.options;
    return Array.isArray(limit) ? (limit[key] ?? limit.at(-1) ?? 5000) : limit;
  }

  private window(key: number): Window {
    let window = this.windows.get(key);
    if (!window) {
      window = { used: 0, resetAt: null };
      this.windows.set(key, window);
    }
    if (window.resetAt !== null && this.now() >= window.resetAt) {
      window.used = 0;
      window.resetAt = null;
    }
    return window;
  }

  state(key: number): RateState {
    const window = this.window(key);
    const limit = this.limitOf(key);
    const resetAtMs = window.resetAt ?? this.now() + this.options.windowMs;
    return { limit, used: window.used, remaining: Math.max(0, limit - window.used), reset: Math.ceil(resetAtMs / 1000), resetAtMs };
  }

  exhausted(key: number): boolean {
    return this.state(key).remaining <= 0;
  }

  /** Counts one request; false (and nothing counted) when the window is exhausted. */
  consume(key: number): boolean {
    const window = this.window(key);
    if (window.used >= this.limitOf(key)) return false;
    if (window.resetAt === null) window.resetAt = this.now() + this.options.windowMs;
    window.used++;
    return true;
  }

  /** Uses up the window; it resets `resetInMs` from now. */
  exhaust(key: number, resetInMs: number): void {
    const window = this.window(key);
    window.used = this.limitOf(key);
    window.resetAt = this.now() + resetInMs;
  }

  /** Starts fresh windows for everyone. */
  resetAll(): void {
    this.windows.clear();
  }
}
