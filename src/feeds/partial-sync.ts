import type { Compilable, Kysely } from 'kysely';
import { backoffDelay, type BackoffPolicy } from '../util/backoff.js';
import type { Schema } from '../store/types.js';
import { changeEvent } from './changes.js';
import { changesAfter, changesNumbered, type ChangeRow } from './store/changes.js';
import { deletePendingStep, dueHeads, heldKeys, insertHeldSteps, type HeldRow } from './store/pending.js';
import { recordPassStep } from './store/run-steps.js';
import { deliverInOrder, type DeliveryResult, type Planned } from './delivery.js';
import type { FeedRecord } from './store/feeds.js';
import type { DeliveryOutcome, FeedSink } from './sinks/types.js';

/** What one pass of a partial sync needs. */
export interface PassContext {
  db: Kysely<Schema>;
  feed: FeedRecord;
  sink: FeedSink;
  instance: string;
  matches: (type: string, scope: string) => boolean;
  /** Changes read (and held-back changes retried) per pass. */
  window: number;
  /** Failures after which a change goes to the dead letters. */
  maxAttempts: number;
  backoff: BackoffPolicy;
  signal: AbortSignal;
  /** The changes after `after`, read ahead by the pass before this one; used when `after` is still the cursor. */
  readAhead?: ReadAhead;
  /** Runs once this pass's events are out, before their acknowledgements are awaited (the previous pass's write). */
  whileDelivering?: () => Promise<void>;
}

/** The next window, read while the pass before it was delivering. */
export interface ReadAhead {
  after: number;
  changes: Promise<ChangeRow[]>;
}

/** A pass's result: the statements that record it (to run behind the feed's fence) and what it did. */
export interface PassResult {
  steps: Compilable[];
  delivered: number;
  failed: number;
  /** The sink answered 410 Gone: the feed is to be disabled. */
  gone: string | null;
  /** More may be due at once (a full window was read, or held-back changes became due). */
  more: boolean;
  cursor: number;
  /** The window after this one, being read (when this one was full). */
  readAhead?: ReadAhead;
  /** Everything due was acknowledged and nothing is held back: the next pass depends on nothing this one writes but its cursor. */
  clean: boolean;
}

interface Item {
  change: ChangeRow;
  /** Failures so far, for a held-back change; null for a change read after the cursor. */
  attempts: number | null;
}

type Failure = Extract<DeliveryOutcome, { ok: false }>;

/** The changes of `changes` that the delivery did not get to (it was stopped). */
function unsent(changes: readonly ChangeRow[], result: DeliveryResult<Item>): ChangeRow[] {
  const sent = new Set([...result.acked, ...result.failed.map((failure) => failure.item), ...result.heldBack].map((item) => item.change.seq));
  return changes.filter((change) => !sent.has(change.seq));
}

/** The held-back changes due for a retry and the window after the cursor: what a pass delivers. */
interface DueChanges {
  /** Something is held back (so there may be heads to retry and keys to wait behind). */
  holding: boolean;
  /** The due heads of held-back keys, with their failures so far. */
  heads: { seq: number; attempts: number }[];
  headRows: ChangeRow[];
  window: ChangeRow[];
  held: Set<string>;
}

async function readDue(ctx: PassContext, now: number): Promise<DueChanges> {
  const { db, feed } = ctx;
  // pending_at is null exactly when nothing is held back: then there is nothing to retry or wait behind.
  const holding = feed.pendingAt !== null;
  const heads = holding ? await dueHeads(db, feed.id, now, ctx.window) : [];
  const headRows = await changesNumbered(
    db,
    heads.map((head) => head.seq),
  );
  const window = ctx.readAhead?.after === feed.cursor ? await ctx.readAhead.changes : await changesAfter(db, feed.cursor, ctx.window);
  const held = holding ? await heldKeys(db, feed.id) : new Set<string>();
  return { holding, heads, headRows, window, held };
}

/** The deliveries of a pass (retried heads first, then fresh changes), and the changes parked behind a held-back key. */
function planDeliveries(ctx: PassContext, due: DueChanges): { planned: Planned<Item>[]; parked: ChangeRow[]; fresh: ChangeRow[] } {
  const attemptsBySeq = new Map(due.heads.map((head) => [head.seq, head.attempts]));
  const planned: Planned<Item>[] = [];
  const parked: ChangeRow[] = [];
  // A change of a retried or held-back key waits behind that key's head: not delivered this pass.
  for (const change of due.headRows) planned.push({ item: { change, attempts: attemptsBySeq.get(change.seq) ?? 0 }, key: change.key, event: changeEvent(ctx.instance, change) });
  const headKeys = new Set(due.headRows.map((change) => change.key));
  const fresh: ChangeRow[] = [];
  for (const change of due.window) {
    if (!ctx.matches(change.type, change.scope)) continue;
    if (due.held.has(change.key) || headKeys.has(change.key)) parked.push(change);
    else fresh.push(change);
  }
  for (const change of fresh) planned.push({ item: { change, attempts: null }, key: change.key, event: changeEvent(ctx.instance, change) });
  return { planned, parked, fresh };
}

/**
 * While this window is out, the next one is read and its events built, and the previous pass's
 * write is made: after a turn of the event loop, so that the sink has sent this window first.
 */
async function whileWindowIsOut(ctx: PassContext, window: readonly ChangeRow[]): Promise<ReadAhead | undefined> {
  const last = window.at(-1)?.seq;
  const full = window.length >= ctx.window && last !== undefined;
  let readAhead: ReadAhead | undefined;
  if (full || ctx.whileDelivering) await new Promise((resolve) => setImmediate(resolve));
  if (full) {
    readAhead = { after: last, changes: changesAfter(ctx.db, last, ctx.window).then((rows) => rows.map((row) => (changeEvent(ctx.instance, row), row))) };
    readAhead.changes.catch(() => undefined);
  }
  await ctx.whileDelivering?.();
  return readAhead;
}

/** Where the cursor stops after a delivery, which fresh failures are recorded, and which changes are held back. */
interface Settled {
  cursor: number;
  failedFresh: DeliveryResult<Item>['failed'];
  heldBack: ChangeRow[];
  freshUnsent: ChangeRow[];
}

function settleCursor(options: { feed: FeedRecord; window: readonly ChangeRow[]; planned: readonly Planned<Item>[]; fresh: readonly ChangeRow[]; parked: readonly ChangeRow[]; result: DeliveryResult<Item>; gone: string | null }): Settled {
  const { window, result, gone } = options;
  let cursor = window.length > 0 ? window[window.length - 1]!.seq : options.feed.cursor;
  const freshUnsent = result.acked.length + result.failed.length + result.heldBack.length === options.planned.length ? [] : unsent(options.fresh, result);
  if (freshUnsent.length > 0) cursor = Math.min(cursor, freshUnsent[0]!.seq - 1);
  const freshFailures = result.failed.filter((failure) => failure.item.attempts === null);
  const freshHeld = result.heldBack.filter((item) => item.attempts === null).map((item) => item.change);
  let failedFresh = freshFailures;
  let keptFresh = freshHeld;
  if ((result.acked.length === 0 && result.failed.length > 0) || gone) {
    // Nothing got through: hold back only the first change that failed and stop the cursor there.
    const first = freshFailures.reduce<(typeof freshFailures)[number] | undefined>((lowest, failure) => (!lowest || failure.item.change.seq < lowest.item.change.seq ? failure : lowest), undefined);
    failedFresh = first ? [first] : [];
    const stop = first ? first.item.change.seq : cursor;
    keptFresh = [];
    cursor = Math.min(cursor, stop);
  }
  // Everything held back lies at or below the cursor; what lies above it is read again next pass.
  const heldBack = [...options.parked, ...keptFresh].filter((change) => change.seq <= cursor);
  return { cursor, failedFresh, heldBack, freshUnsent };
}

/** The statements that record a pass: acknowledged retries removed, failures held back or dead, the feed's cursor and state. */
function recordingSteps(ctx: PassContext, options: { now: number; result: DeliveryResult<Item>; settled: Settled; gone: string | null }): Compilable[] {
  const { db, feed } = ctx;
  const { now, result, gone } = options;
  const { cursor, failedFresh, heldBack } = options.settled;
  const steps: Compilable[] = [];
  const feedId = feed.id;
  const acked = result.acked.filter((item) => item.attempts !== null).map((item) => item.change.seq);
  if (acked.length > 0) steps.push(deletePendingStep(db, feedId, acked));
  const pendingRows: HeldRow[] = [];
  const deadRows: HeldRow[] = [];
  const retryAt = (attempts: number, failure: Failure) => now + Math.max(backoffDelay(attempts, ctx.backoff), failure.retryAfterMs ?? 0);
  for (const failure of result.failed) {
    if (failure.item.attempts === null && !failedFresh.includes(failure)) continue;
    const attempts = (failure.item.attempts ?? 0) + 1;
    const row = { seq: failure.item.change.seq, key: failure.item.change.key, attempts, nextAt: retryAt(attempts, failure.outcome), error: failure.outcome.error.slice(0, 2000) };
    if (attempts >= ctx.maxAttempts && !failure.outcome.gone) deadRows.push(row);
    else pendingRows.push(row);
  }
  for (const change of heldBack) pendingRows.push({ seq: change.seq, key: change.key, attempts: 0, nextAt: 0, error: null });
  // Held-back rows that failed again are replaced (their attempts go up); new ones inserted.
  const retried = result.failed.filter((failure) => failure.item.attempts !== null).map((failure) => failure.item.change.seq);
  if (retried.length > 0) steps.push(deletePendingStep(db, feedId, retried));
  steps.push(...insertHeldSteps(db, 'feed_pending', feedId, pendingRows), ...insertHeldSteps(db, 'feed_dead_letters', feedId, deadRows));
  const nothingThrough = result.acked.length === 0 && result.failed.length > 0;
  const failures = nothingThrough ? feed.failures + 1 : 0;
  const lastError = result.failed[0]?.outcome.error.slice(0, 2000) ?? null;
  const retryAfter = Math.max(0, ...result.failed.map((failure) => failure.outcome.retryAfterMs ?? 0));
  steps.push(
    recordPassStep(db, feedId, {
      cursor,
      delivered: result.acked.length,
      failures,
      retryAt: nothingThrough ? now + Math.max(backoffDelay(failures, ctx.backoff), retryAfter) : null,
      // A new error replaces the last one; a pass that got changes through without one clears it.
      lastError: lastError !== null ? lastError : result.acked.length > 0 ? null : undefined,
      ...(gone ? { disabled: `the sink answered 410 Gone (${gone}); \`forgesync feed resume ${feed.name}\` enables it again` } : {}),
    }),
  );
  return steps;
}

/**
 * One pass of a partial sync: retries the held-back changes that are due,
 * then delivers the changes after the cursor, per key in order, and says how
 * to record it. A change that fails is held back (with its key's later
 * changes) and retried with backoff; after `maxAttempts` it is dead. When
 * nothing at all got through (the sink is down), only the first failed
 * change is held back and the cursor stops there, so an outage costs one
 * row per pass rather than a copy of the log.
 */
export async function partialPass(ctx: PassContext): Promise<PassResult> {
  const { feed, signal } = ctx;
  const now = Date.now();
  const due = await readDue(ctx, now);
  const { planned, parked, fresh } = planDeliveries(ctx, due);
  const delivering = deliverInOrder(ctx.sink, planned, signal);
  const readAhead = await whileWindowIsOut(ctx, due.window);
  const result = await delivering;

  const gone = result.failed.find((failure) => failure.outcome.gone)?.outcome.error ?? null;
  const settled = settleCursor({ feed, window: due.window, planned, fresh, parked, result, gone });
  const steps = recordingSteps(ctx, { now, result, settled, gone });
  const { window, heads, holding } = due;
  const nothingThrough = result.acked.length === 0 && result.failed.length > 0;
  const more = !nothingThrough && !gone && (window.length >= ctx.window || heads.length >= ctx.window || result.acked.some((item) => item.attempts !== null));
  const clean = !holding && result.failed.length === 0 && result.heldBack.length === 0 && parked.length === 0 && settled.freshUnsent.length === 0;
  return { steps, delivered: result.acked.length, failed: result.failed.length, gone, more, cursor: settled.cursor, clean, ...(readAhead ? { readAhead } : {}) };
}
