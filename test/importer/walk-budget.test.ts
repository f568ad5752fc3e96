import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BodyMeter } from '../../src/egress/body.js';
import type { GithubResponse } from '../../src/importer/github/client-types.js';
import type { RunContext } from '../../src/importer/run/context.js';
import { PageBudget, WALK_BYTES } from '../../src/importer/run/page-budget.js';
import { walk, type Collection } from '../../src/importer/run/walk.js';
import { createLogger } from '../../src/logging/logger.js';
import { openDatabase, type Database } from '../../src/store/database.js';

/*
 * A list walk against a host that serves a tiny page 1 and large pages
 * after it: what the walk holds in pages (read, or being read, and not yet
 * stored) stays within the run's page budget, whatever page 1 said about
 * the size of the rest. The client is a stand-in that delivers each answer
 * in 64 KiB chunks through the walk's meter, as the egress layer does.
 */

const MiB = 2 ** 20;
const CHUNK = 64 * 1024;
const CONCURRENCY = 20;

/** A client whose pages are `sizeOf(page)` bytes, delivered a chunk per turn of the event loop; it tracks what the walk holds. */
class ChunkedClient {
  /** Bytes delivered of pages not stored yet (the walk holds them). */
  held = 0;
  peak = 0;
  readonly #done: number[] = [];
  inFlight = 0;
  peakInFlight = 0;

  constructor(
    readonly lastPage: number,
    readonly sizeOf: (page: number) => number,
    readonly failOn?: number,
  ) {}

  async get(path: string, options: { query?: Record<string, string | number>; meter?: BodyMeter }): Promise<GithubResponse> {
    const page = Number(options.query?.page ?? 1);
    const size = this.sizeOf(page);
    this.inFlight += 1;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    let counted = 0;
    try {
      for (let sent = 0; sent < size; sent += CHUNK) {
        await tick();
        const bytes = Math.min(CHUNK, size - sent);
        this.held += bytes;
        counted += bytes;
        this.peak = Math.max(this.peak, this.held);
        const wait = options.meter?.add(bytes);
        if (wait) await wait;
        if (page === this.failOn && sent >= size / 2) throw new Error(`page ${page} broke off`);
      }
    } catch (error) {
      this.held -= counted;
      options.meter?.drop(counted);
      throw error;
    } finally {
      this.inFlight -= 1;
    }
    this.#done.push(size);
    const at = (n: number) => `https://api.example.test${path}?page=${n}`;
    const links = { ...(page < this.lastPage ? { next: at(page + 1) } : {}), ...(page === 1 ? { last: at(this.lastPage) } : {}) };
    return { status: 200, data: [{ id: page }], headers: {}, etag: undefined, links, date: Date.now(), bytes: size };
  }

  /** A page was stored: the oldest page read is no longer held (pages are stored in the order they were read). */
  stored(): void {
    this.held -= this.#done.shift() ?? 0;
  }
}

let database: Database;

beforeAll(async () => {
  database = await openDatabase(`sqlite:${join(mkdtempSync(join(tmpdir(), 'forgesync-walk-budget-')), 'forgesync.db')}`);
});
afterAll(async () => database?.close());

/** A run's context around `client`, storing nothing but telling the client when a page would have been stored. */
function contextOf(client: ChunkedClient, importId: number): RunContext {
  return {
    record: { name: `walk-${importId}`, mode: 'full' },
    importId,
    run: 1,
    db: database.db,
    concurrency: CONCURRENCY,
    client,
    pages: new PageBudget(),
    signal: new AbortController().signal,
    logger: createLogger({ level: 'silent' }),
    commit: async () => {
      await sleep(2);
      client.stored();
    },
  } as unknown as RunContext;
}

const list = (name: string): Collection => ({ name, path: '/repos/o/r/issues', fullQuery: { state: 'all' }, handle: () => [] });

describe('a list walk against pages that grow after page 1', () => {
  it('holds at most the walk budget in pages, however many are asked for at once and whatever page 1 weighed', async () => {
    // Page 1 is 10 KB: judged by it alone, 20 pages of 3 MiB would be read at once (60 MiB).
    const client = new ChunkedClient(40, (page) => (page === 1 ? 10_000 : 3 * MiB));
    const ctx = contextOf(client, 1);
    const cursor = await walk(ctx, list('issues'));
    expect(cursor.done).toBe(true);
    expect(cursor.pages).toBe(40);
    expect(client.held).toBe(0);
    // What the walk held never passed its budget, give or take the last chunk each page read before it paused.
    expect(client.peak).toBeLessThanOrEqual(WALK_BYTES + CONCURRENCY * CHUNK);
    expect(client.peak).toBeGreaterThan(2 * 3 * MiB);
    expect(ctx.pages.used).toBe(0);
    expect(ctx.pages.peak).toBeLessThanOrEqual(WALK_BYTES + CONCURRENCY * CHUNK);
  }, 60_000);

  it('still reads small pages in parallel, up to the concurrency', async () => {
    const client = new ChunkedClient(60, () => 100_000);
    const ctx = contextOf(client, 2);
    const cursor = await walk(ctx, list('notes'));
    expect(cursor.pages).toBe(60);
    expect(client.peakInFlight).toBeGreaterThanOrEqual(CONCURRENCY / 2);
    expect(ctx.pages.used).toBe(0);
  }, 60_000);

  it('gives back every page\'s share when a page fails', async () => {
    const client = new ChunkedClient(30, (page) => (page === 1 ? 1000 : 2 * MiB), 7);
    const ctx = contextOf(client, 3);
    await expect(walk(ctx, list('comments'))).rejects.toThrow(/page 7 broke off/);
    expect(ctx.pages.used).toBe(0);
  }, 60_000);

  it('shares one budget between walks running at once', async () => {
    // Every page alike: the client's count of what is held does not tell the walks apart.
    const client = new ChunkedClient(15, () => 1.5 * MiB);
    const ctx = contextOf(client, 4);
    const cursors = await Promise.all(['a', 'b', 'c'].map((name) => walk(ctx, list(name))));
    expect(cursors.map((cursor) => cursor.pages)).toEqual([15, 15, 15]);
    expect(client.peak).toBeLessThanOrEqual(WALK_BYTES + 3 * CONCURRENCY * CHUNK);
    expect(ctx.pages.used).toBe(0);
  }, 60_000);
});
