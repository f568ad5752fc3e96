import type { KeysetPosition, StoredRow } from '../../../store/graphql-reads.js';
import { cursorIndex, indexCursor, keysetCursor, keysetMark } from './cursors.js';

/*
 * Connections as GitHub answers them: `nodes`, `edges { cursor node }`,
 * `pageInfo` and `totalCount` (counted only when asked for). Two kinds:
 * a short list read whole and sliced (an issue's labels, a repository's
 * milestones), and a keyset connection read a page at a time from the
 * store (a repository's issues, search results), whose cursors are
 * positions in the order.
 */

/** A connection's paging arguments (the limits in limits.ts have been checked before execution). */
export interface PageArgs {
  first?: number | null | undefined;
  last?: number | null | undefined;
  after?: string | null | undefined;
  before?: string | null | undefined;
}

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

/** One page of a connection; its fields are named like GitHub's. */
export class Connection<T> {
  constructor(
    private readonly items: readonly T[],
    private readonly cursors: readonly string[],
    private readonly paging: { hasNextPage: boolean; hasPreviousPage: boolean },
    private readonly count: () => number | Promise<number>,
  ) {}

  nodes(): readonly T[] {
    return this.items;
  }

  edges(): { cursor: string; node: T }[] {
    return this.items.map((node, index) => ({ cursor: this.cursors[index]!, node }));
  }

  pageInfo(): PageInfo {
    return { ...this.paging, startCursor: this.cursors[0] ?? null, endCursor: this.cursors.at(-1) ?? null };
  }

  totalCount(): number | Promise<number> {
    return this.count();
  }
}

/** The connection of an empty list (projects, files: nothing the copy has). */
export function emptyConnection<T>(): Connection<T> {
  return new Connection<T>([], [], { hasNextPage: false, hasPreviousPage: false }, () => 0);
}

/**
 * A page of a short list read whole: `after`/`before` are indexes, `first`
 * takes from the front of what is between them, `last` from the back.
 * Without either (a `totalCount`-only selection) the whole range.
 */
export function listConnection<T>(all: readonly T[], args: PageArgs, total: () => number | Promise<number> = () => all.length): Connection<T> {
  let start = args.after ? cursorIndex(args.after) + 1 : 0;
  let end = args.before ? Math.min(cursorIndex(args.before), all.length) : all.length;
  if (start > end) start = end;
  const rangeStart = start;
  const rangeEnd = end;
  if (typeof args.first === 'number') end = Math.min(end, start + args.first);
  if (typeof args.last === 'number') start = Math.max(start, end - args.last);
  const indexes = Array.from({ length: end - start }, (_, offset) => start + offset);
  return new Connection(
    indexes.map((index) => all[index]!),
    indexes.map(indexCursor),
    { hasNextPage: end < rangeEnd, hasPreviousPage: start > rangeStart },
    total,
  );
}

/** Where a keyset connection reads from: the store's rows in order, narrowed further, made into nodes. */
export interface KeysetSource<T> {
  /** Up to `limit` rows strictly between the bounds, from the end backwards with `fromEnd`. */
  read(request: { after?: KeysetPosition | undefined; before?: KeysetPosition | undefined; fromEnd?: 'from-end' | undefined; limit: number }): Promise<StoredRow[]>;
  /** The rows of a batch that also pass the filters only the JSON has (absent: all pass). */
  keep?: ((rows: StoredRow[]) => Promise<StoredRow[]>) | undefined;
  /** The nodes of the rows of the page, in order. */
  nodes(rows: StoredRow[]): Promise<T[]>;
  /** How many rows pass every filter. */
  count(): Promise<number>;
}

/** Rows read per statement while JSON-only filters drop some. */
const SCAN_BATCH = 500;

/**
 * Reads `want` rows that pass `source.keep` (one more, to know whether
 * there is a next page), a batch at a time from `from` onwards.
 */
async function collect<T>(source: KeysetSource<T>, bounds: { after?: KeysetPosition | undefined; before?: KeysetPosition | undefined; fromEnd?: 'from-end' | undefined }, want: number): Promise<StoredRow[]> {
  const kept: StoredRow[] = [];
  let position = bounds.fromEnd ? bounds.before : bounds.after;
  for (;;) {
    const limit = source.keep ? Math.max(SCAN_BATCH, want + 1) : want + 1;
    const batch = await source.read({ ...bounds, ...(bounds.fromEnd ? { before: position } : { after: position }), limit });
    kept.push(...(source.keep ? await source.keep(batch) : batch));
    if (kept.length > want || batch.length < limit) return kept;
    position = batch.at(-1)!.position;
  }
}

/**
 * A page of a keyset connection: `first` reads forwards from `after`, `last`
 * backwards from `before` (or the end); a selection with neither (only
 * `totalCount`) reads no rows. With `cap` (a search's 1,000), no item past
 * the cap-th is answered when reading forwards: cursors count their items'
 * ordinals for it.
 */
export async function keysetConnection<T>(source: KeysetSource<T>, args: PageArgs, options: { cap?: number } = {}): Promise<Connection<T>> {
  const after = args.after ? keysetMark(args.after) : undefined;
  const before = args.before ? keysetMark(args.before).position : undefined;
  const count = () => source.count();
  const none = () => new Connection<T>([], [], { hasNextPage: false, hasPreviousPage: after !== undefined }, count);
  if (typeof args.first !== 'number' && typeof args.last !== 'number') return none();
  const fromEnd = typeof args.first !== 'number';
  // Ordinals are known reading forwards from the start or from a cursor that has one.
  const base = fromEnd ? undefined : after === undefined ? 0 : after.ordinal;
  const room = options.cap !== undefined && base !== undefined ? options.cap - base : Infinity;
  const want = Math.min((fromEnd ? args.last : args.first) as number, room);
  if (want <= 0) return none();
  const rows = await collect(source, { after: after?.position, before, ...(fromEnd ? { fromEnd: 'from-end' as const } : {}) }, want);
  const more = rows.length > want && want < room;
  const page = rows.slice(0, want);
  if (fromEnd) page.reverse();
  const paging = fromEnd ? { hasNextPage: before !== undefined, hasPreviousPage: more } : { hasNextPage: more, hasPreviousPage: after !== undefined };
  const cursors = page.map((row, index) => keysetCursor({ position: row.position, ordinal: base === undefined ? undefined : base + index + 1 }));
  return new Connection(await source.nodes(page), cursors, paging, count);
}

/** How many rows pass `source.keep`: every row read, a batch at a time (the count of a JSON-filtered list). */
export async function countKept<T>(source: Pick<KeysetSource<T>, 'read' | 'keep'>): Promise<number> {
  let total = 0;
  let after: KeysetPosition | undefined;
  for (;;) {
    const batch = await source.read({ after, limit: SCAN_BATCH * 2 });
    total += source.keep ? (await source.keep(batch)).length : batch.length;
    if (batch.length < SCAN_BATCH * 2) return total;
    after = batch.at(-1)!.position;
  }
}
