import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { FeedRepository } from '../../src/feeds/store/feeds.js';
import { FeedNameTakenError, FeedNotFoundError } from '../../src/feeds/errors.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';

describe.each(['sqlite', 'postgres'] as const)('feed rows on %s', (kind) => {
  let target: TestDatabase;
  let database: Database;
  let repo: FeedRepository;

  beforeAll(async () => {
    target = await createTestDatabase(kind);
    database = await openDatabase(target.url);
    repo = new FeedRepository(database.db);
  });
  afterAll(async () => {
    await database?.close();
    await target?.drop();
  });

  const newFeed = (name: string) => ({ name, sink: 'file:///tmp/feed', types: null, sources: null, secret: null, batch: 1 });

  it('moves the cursor only under the newest fence: a stale holder is refused and changes nothing', async () => {
    const feed = await repo.create(newFeed('fenced'), 7, new Date());
    expect(feed).toMatchObject({ cursor: 7, fullRequestedAt: expect.any(Date), paused: false });
    const move = (cursor: number) => [database.db.updateTable('feeds').set({ cursor }).where('id', '=', feed.id)];
    expect(await repo.fenced(feed.id, 5n, move(10))).toBe(true);
    expect(await repo.storedFence(feed.id)).toBe(5n);
    // The holder before it (fence 3) wakes up and tries to write what it delivered.
    expect(await repo.fenced(feed.id, 3n, move(99))).toBe(false);
    expect((await repo.get('fenced')).cursor).toBe(10);
    expect(await repo.storedFence(feed.id)).toBe(5n);
    expect(await repo.fenced(feed.id, 6n, move(12))).toBe(true);
    expect((await repo.get('fenced')).cursor).toBe(12);
  });

  it('records requests without touching what runs write, and refuses unknown and taken names', async () => {
    await repo.create(newFeed('requests'), 0, new Date());
    await expect(repo.create(newFeed('requests'), 0, new Date())).rejects.toBeInstanceOf(FeedNameTakenError);
    const first = new Date(1_000_000);
    const paused = await repo.request('requests', { paused: true, partial: true, replayFrom: 4 }, first);
    expect(paused).toMatchObject({ paused: true, partialRequested: true, replayFrom: 4 });
    // A full sync asked for twice is one request: the first time stays.
    const requestedAt = paused.fullRequestedAt!.getTime();
    expect((await repo.request('requests', { full: true }, new Date(requestedAt + 5000))).fullRequestedAt!.getTime()).toBe(requestedAt);
    await repo.recordSkip(paused.id, 'partial sync', new Date());
    expect((await repo.get('requests')).skips).toBe(1);
    await expect(repo.request('missing', { paused: true }, new Date())).rejects.toBeInstanceOf(FeedNotFoundError);
    await repo.remove('requests');
    expect(await repo.find('requests')).toBeUndefined();
  });
});
