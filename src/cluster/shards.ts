import { sql, type Kysely } from 'kysely';
import type { Schema } from '../store/types.js';
import { NoOtherShardError, ShardNotFoundError, ShardUnavailableError } from './errors.js';
import { rendezvousShard, type Candidate } from './placement.js';

/** `active` and `draining` are set; `down` is a shard whose worker has not been seen for a while. */
export type ShardState = 'active' | 'draining' | 'down';

/** A shard as `forgesync shard list --json` prints it (a contract for other tools). */
export interface ShardInfo {
  id: string;
  state: ShardState;
  /** Sources placed on it. */
  sources: number;
  /** What its mirrors take on disk, as its worker last reported. */
  bytes: number;
  /** The worker that registered or heartbeat it last: `<host>:<pid>`. */
  node: string;
  lastSeenAt: string;
}

/** What a worker registers about the shard it owns. */
export interface ShardRegistration {
  id: string;
  node: string;
  dataDir: string;
  weight?: number;
  /** Where its worker answers reads that need the files (cluster/internal-server.ts). */
  endpoint?: string;
}

/** The worker behind a heartbeat, as it registered. */
export type ShardWorker = Pick<ShardRegistration, 'node' | 'endpoint'>;

/** Where to reach a shard's worker for reads, and whether it is up. */
export interface ShardEndpoint {
  id: string;
  state: ShardState;
  /** Null when its worker runs no internal endpoint. */
  endpoint: string | null;
}

/** Places this many unplaced sources a statement. */
const PLACE_BATCH = 500;

/**
 * The storage shards (migration 008) and where sources live: workers
 * register and heartbeat their shard; a source is placed on an active shard
 * when it is added, by weighted rendezvous hashing, and stays there until it
 * is moved on purpose.
 */
export class ShardRepository {
  constructor(
    readonly db: Kysely<Schema>,
    /** A shard whose worker was not seen for this long is down (it gets no new sources). */
    private readonly downAfterMs: number,
  ) {}

  /**
   * Records that a worker owns shard `id` (created active, or taken over with its state kept: a
   * draining shard stays draining when its worker restarts).
   */
  async register(shard: ShardRegistration, now = Date.now()): Promise<void> {
    await this.db
      .insertInto('shards')
      .values({ id: shard.id, state: 'active', node: shard.node, data_dir: shard.dataDir, weight: shard.weight ?? 1, bytes: 0, registered_at: now, last_seen_at: now, endpoint: shard.endpoint ?? null })
      .onConflict((oc) => oc.column('id').doUpdateSet({ node: shard.node, data_dir: shard.dataDir, weight: shard.weight ?? 1, last_seen_at: now, endpoint: shard.endpoint ?? null }))
      .execute();
  }

  /**
   * The worker of shard `id` is alive; `bytes` is what its mirrors take now.
   * The beating worker's `node` and `endpoint` are written too, not only at
   * register: several workers may serve one shard (same shard id, same data
   * dir), and when the one that registered last stops, the row would name it,
   * and api processes forward reads to its dead endpoint, for good. With
   * each beat naming its worker, a survivor's next beat (every ttl/3) puts
   * itself back. Live workers take turns in the row; any of them can answer.
   */
  async heartbeat(id: string, bytes: number, worker: ShardWorker, now = Date.now()): Promise<void> {
    await this.db.updateTable('shards').set({ last_seen_at: now, bytes, node: worker.node, endpoint: worker.endpoint ?? null }).where('id', '=', id).execute();
  }

  /** Every shard with its sources counted, by id. */
  async list(now = Date.now()): Promise<ShardInfo[]> {
    const rows = await this.db
      .selectFrom('shards as h')
      .leftJoin('sources as s', 's.shard_id', 'h.id')
      .select(['h.id', 'h.state', 'h.node', 'h.bytes', 'h.last_seen_at', sql<number | string>`count(s.id)`.as('sources')])
      .groupBy(['h.id', 'h.state', 'h.node', 'h.bytes', 'h.last_seen_at'])
      .orderBy('h.id')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      state: this.#state(row.state, Number(row.last_seen_at), now),
      sources: Number(row.sources),
      bytes: Number(row.bytes),
      node: row.node,
      lastSeenAt: new Date(Number(row.last_seen_at)).toISOString(),
    }));
  }

  /** Every shard's endpoint and state, by id (`id` alone: that shard, or nothing when unknown). */
  async endpoints(id?: string, now = Date.now()): Promise<ShardEndpoint[]> {
    let query = this.db.selectFrom('shards').select(['id', 'state', 'endpoint', 'last_seen_at']).orderBy('id');
    if (id !== undefined) query = query.where('id', '=', id);
    const rows = await query.execute();
    return rows.map((row) => ({ id: row.id, state: this.#state(row.state, Number(row.last_seen_at), now), endpoint: row.endpoint }));
  }

  /** The ids of the shards whose workers are alive (active or draining, seen lately). */
  async live(now = Date.now()): Promise<string[]> {
    const rows = await this.db.selectFrom('shards').select('id').where('last_seen_at', '>=', now - this.downAfterMs).orderBy('id').execute();
    return rows.map((row) => row.id);
  }

  /** The shards new sources may go to: active, and seen lately. */
  async candidates(now = Date.now()): Promise<Candidate[]> {
    const rows = await this.db.selectFrom('shards').select(['id', 'weight']).where('state', '=', 'active').where('weight', '>', 0).where('last_seen_at', '>=', now - this.downAfterMs).execute();
    return rows.map((row) => ({ id: row.id, weight: Number(row.weight) }));
  }

  /** The shard source `name` goes to now; null when no shard is active. */
  async choose(name: string, now = Date.now()): Promise<string | null> {
    return rendezvousShard(name, await this.candidates(now));
  }

  /**
   * Places sources that have no shard yet (added while none was active):
   * each on its rendezvous choice, only if still unplaced. Returns the ids
   * of those it placed (their jobs could not be queued until now).
   */
  async placeUnplaced(now = Date.now()): Promise<number[]> {
    const candidates = await this.candidates(now);
    const placed: number[] = [];
    if (candidates.length === 0) return placed;
    for (;;) {
      const rows = await this.db.selectFrom('sources').select(['id', 'name']).where('shard_id', 'is', null).orderBy('id').limit(PLACE_BATCH).execute();
      if (rows.length === 0) return placed;
      for (const row of rows) {
        const result = await this.db.updateTable('sources').set({ shard_id: rendezvousShard(row.name, candidates) }).where('id', '=', row.id).where('shard_id', 'is', null).executeTakeFirst();
        if (Number(result.numUpdatedRows) > 0) placed.push(Number(row.id));
      }
    }
  }

  /**
   * Asks for source `id` to move to shard `target` (its workers then sync it
   * and flip its placement). False when it is already there.
   * @throws ShardNotFoundError, ShardUnavailableError
   */
  async requestMove(id: number, target: string, now = Date.now()): Promise<boolean> {
    await this.#takingSources(target, now);
    const result = await this.db.updateTable('sources').set({ move_to: target }).where('id', '=', id).where((eb) => eb.or([eb('shard_id', 'is', null), eb('shard_id', '<>', target)])).executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) {
      // Already there: a move to it asked before is called off.
      await this.db.updateTable('sources').set({ move_to: null }).where('id', '=', id).execute();
      return false;
    }
    return true;
  }

  /**
   * Marks shard `id` draining (it takes no new sources) and asks every source
   * on it to move to the other active shards (rendezvous among them). Returns
   * the ids of the sources asked to move.
   * @throws ShardNotFoundError, NoOtherShardError
   */
  async drain(id: string, now = Date.now()): Promise<number[]> {
    const shard = await this.db.selectFrom('shards').select('id').where('id', '=', id).executeTakeFirst();
    if (!shard) throw new ShardNotFoundError(id);
    const others = (await this.candidates(now)).filter((candidate) => candidate.id !== id);
    if (others.length === 0) throw new NoOtherShardError(id);
    await this.db.updateTable('shards').set({ state: 'draining' }).where('id', '=', id).execute();
    const rows = await this.db.selectFrom('sources').select(['id', 'name']).where('shard_id', '=', id).execute();
    const moving: number[] = [];
    for (const row of rows) {
      await this.db.updateTable('sources').set({ move_to: rendezvousShard(row.name, others) }).where('id', '=', row.id).where('shard_id', '=', id).execute();
      moving.push(Number(row.id));
    }
    return moving;
  }

  /** Sources still placed on shard `id`. */
  async sourcesOn(id: string): Promise<number> {
    const row = await this.db.selectFrom('sources').select(sql<number | string>`count(*)`.as('n')).where('shard_id', '=', id).executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** @throws ShardNotFoundError, ShardUnavailableError unless shard `id` is active and seen. */
  async #takingSources(id: string, now: number): Promise<void> {
    const row = await this.db.selectFrom('shards').select(['state', 'last_seen_at']).where('id', '=', id).executeTakeFirst();
    if (!row) throw new ShardNotFoundError(id);
    const state = this.#state(row.state, Number(row.last_seen_at), now);
    if (state !== 'active') throw new ShardUnavailableError(id, state);
  }

  #state(stored: string, lastSeenAt: number, now: number): ShardState {
    if (stored === 'draining') return 'draining';
    return now - lastSeenAt > this.downAfterMs ? 'down' : 'active';
  }
}
