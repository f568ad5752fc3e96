import { createHash } from 'node:crypto';
import type { Compilable, Kysely } from 'kysely';
import type { Schema } from '../store/types.js';
import { changeEvent, eventSource } from './changes.js';
import { latestChanges, type ChangeRow } from './store/changes.js';
import { importObjectsPage, sourcesPage, type ExportedSource } from './store/export.js';
import { fullChunkStep } from './store/run-steps.js';
import { outgoing, sequenceText, type OutgoingEvent } from './events.js';
import type { FeedRecord } from './store/feeds.js';
import type { FeedSink } from './sinks/types.js';

/** Where a full sync stands: the sources phase by source name and ref, then imported objects by (import, type, key). */
type Position =
  | { phase: 'sources'; after: SourcesAt }
  | { phase: 'imports'; after: [importId: number, type: string, key: string] | null };

/** What a chunk of a full sync needs. */
export interface ChunkContext {
  db: Kysely<Schema>;
  feed: FeedRecord;
  sink: FeedSink;
  instance: string;
  matches: (type: string, scope: string) => boolean;
  /** Events per chunk. */
  chunk: number;
  /** The refs of a mirror, by name. */
  readRefs: (mirrorPath: string) => Promise<Map<string, string>>;
  signal: AbortSignal;
}

export interface ChunkResult {
  /** Null when the chunk could not be delivered whole (it is sent again next time). */
  steps: Compilable[] | null;
  exported: number;
  done: boolean;
  error: string | null;
  gone: string | null;
}

/** Item types the importer keeps for itself (never exported). */
const INTERNAL = ['repository', 'pull_request_issue', 'collaborator_direct', 'collaborator_outside', 'issue_deleted'];

/** An id for a state no retained change produced (e.g. one recorded before the change log existed): stable for the same state. */
function stateId(instance: string, key: string, state: string): string {
  return `${instance}:state:${createHash('sha256').update(`${key}\u0000${state}`).digest('hex').slice(0, 32)}`;
}

/**
 * The state event of `key`: the change that made it when the log still has
 * it, else one made up from the state itself; null when the key changed
 * after the full sync began.
 */
function stateEvent(ctx: ChunkContext, key: string, latest: ChangeRow | undefined, current: (change: ChangeRow) => boolean, made: Omit<OutgoingEvent['event'], 'specversion' | 'id' | 'time' | 'datacontenttype' | 'sequence'>, state: string): OutgoingEvent | null {
  // Changed since the full sync began: partial syncs deliver that change, in order; the state read now
  // could otherwise reach the receiver before the older changes they still have to deliver.
  if (latest && latest.seq > (ctx.feed.fullHead ?? Infinity)) return null;
  if (latest && current(latest)) return changeEvent(ctx.instance, latest);
  const seq = ctx.feed.fullHead ?? 0;
  return outgoing({ specversion: '1.0', id: stateId(ctx.instance, key, state), time: new Date().toISOString(), datacontenttype: 'application/json', sequence: sequenceText(seq), ...made }, key);
}

/** One thing a full sync exports of a source: its state (`ref` '') or a ref. */
interface SourceItem {
  ref: string;
  key: string;
  build: (latest: ChangeRow | undefined) => OutgoingEvent | null;
}

/** What a full sync exports of source `row`, in order: its state, then its refs by name. */
async function sourceItems(ctx: ChunkContext, row: ExportedSource): Promise<SourceItem[]> {
  const name = row.name;
  const synced = row.last_synced_at === null ? null : Number(row.last_synced_at);
  const failed = row.last_failure_at === null ? null : Number(row.last_failure_at);
  const state = failed !== null && (synced === null || failed > synced) ? 'failed' : synced !== null ? 'synced' : null;
  const source = eventSource(ctx.instance, 'replication', name);
  const items: SourceItem[] = [];
  if (state !== null && ctx.matches('dev.forgesync.source.state', name)) {
    const data = { source: name, state, previous: null, error: state === 'failed' ? row.last_failure : null };
    items.push({ ref: '', key: name, build: (latest) => stateEvent(ctx, name, latest, (change) => change.data?.state === state, { source, type: 'dev.forgesync.source.state', data }, state) });
  }
  if (row.mirror_path && (ctx.matches('dev.forgesync.ref.created', name) || ctx.matches('dev.forgesync.ref.updated', name))) {
    const refs = await ctx.readRefs(row.mirror_path).catch(() => new Map<string, string>());
    for (const [ref, sha] of [...refs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const key = `${name} ${ref}`;
      const data = { source: name, ref, before: null, after: sha, forced: false };
      items.push({ ref, key, build: (latest) => stateEvent(ctx, key, latest, (change) => change.data?.after === sha, { source, type: 'dev.forgesync.ref.created', subject: ref, data }, sha) });
    }
  }
  return items;
}

/** Where the sources phase stands: the source in progress and the last item of it exported ('' its state), or `done` with it. */
type SourcesAt = { source: string; ref: string; done: boolean } | null;

/** The next chunk of the sources phase, from `at`. */
async function sourcesChunk(ctx: ChunkContext, start: SourcesAt): Promise<{ events: OutgoingEvent[]; next: Position | null }> {
  const { db } = ctx;
  const events: OutgoingEvent[] = [];
  let at = start;
  const PAGE = 50;
  for (;;) {
    const rows = await sourcesPage(db, at === null ? null : at.source, PAGE);
    for (const row of rows) {
      const current = at !== null && row.name === at.source ? at : null;
      if (current?.done) continue;
      const items = (await sourceItems(ctx, row)).filter((item) => current === null || item.ref > current.ref);
      const taken = items.slice(0, ctx.chunk - events.length);
      const latest = await latestChanges(
        db,
        taken.map((item) => item.key),
      );
      for (const item of taken) {
        const event = item.build(latest.get(item.key));
        if (event) events.push(event);
      }
      if (taken.length < items.length) return { events, next: { phase: 'sources', after: { source: row.name, ref: taken.at(-1)!.ref, done: false } } };
      at = { source: row.name, ref: '', done: true };
      if (events.length >= ctx.chunk) return { events, next: { phase: 'sources', after: at } };
    }
    if (rows.length < PAGE) return { events, next: { phase: 'imports', after: null } };
  }
}

async function importsChunk(ctx: ChunkContext, after: [number, string, string] | null): Promise<{ events: OutgoingEvent[]; next: Position | null }> {
  const { db } = ctx;
  const events: OutgoingEvent[] = [];
  let position = after;
  for (;;) {
    const rows = await importObjectsPage(db, { after: position, limit: ctx.chunk, excludeTypes: INTERNAL });
    if (rows.length === 0) return { events, next: null };
    const last = rows[rows.length - 1]!;
    position = [Number(last.import_id), last.type, last.key];
    const wanted = rows.filter((row) => ctx.matches(`dev.forgesync.import.${row.type}`, row.name));
    const keyOf = (row: (typeof rows)[number]) => `${row.name} ${row.type} ${row.key}`;
    const latest = await latestChanges(db, wanted.map(keyOf));
    for (const row of wanted) {
      const key = keyOf(row);
      const change = latest.get(key);
      const number = row.number === null ? undefined : Number(row.number);
      const event = stateEvent(
          ctx,
          key,
          change,
          () => true,
          {
            source: eventSource(ctx.instance, 'importer', row.name),
            type: `dev.forgesync.import.${row.type}`,
            subject: `${row.type}/${number ?? row.key}`,
            data: { import: row.name, id: row.key, ...(number !== undefined ? { number } : {}), action: 'created', object: JSON.parse(row.data) as unknown },
          },
          row.data,
        );
      if (event) events.push(event);
    }
    if (events.length >= ctx.chunk || rows.length < ctx.chunk) return { events, next: rows.length < ctx.chunk ? null : { phase: 'imports', after: position } };
  }
}

/**
 * One chunk of a full sync: the current state of the next items in scope,
 * in key order (each source's state and refs, then each imported object),
 * each event carrying the id of the change that made that state, so a
 * receiver that has it already can tell. Delivered whole or not at all;
 * returns the statements that move the chunk cursor.
 */
export async function fullChunk(ctx: ChunkContext): Promise<ChunkResult> {
  const { db, feed } = ctx;
  const position: Position = feed.fullChunk ? (JSON.parse(feed.fullChunk) as Position) : { phase: 'sources', after: null };
  const { events, next } = position.phase === 'sources' ? await sourcesChunk(ctx, position.after) : await importsChunk(ctx, position.after);
  const outcomes = events.length > 0 ? await ctx.sink.deliver(events, ctx.signal) : [];
  const failed = outcomes.find((outcome) => !outcome.ok);
  if (failed && !failed.ok) return { steps: null, exported: 0, done: false, error: failed.error, gone: failed.gone ? failed.error : null };
  const done = next === null;
  const now = Date.now();
  const update = fullChunkStep(db, feed.id, { exported: events.length, nextChunk: done ? null : JSON.stringify(next), done, now });
  return { steps: [update], exported: events.length, done, error: null, gone: null };
}
