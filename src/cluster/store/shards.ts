import type { Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import { NoOtherShardError, ShardNotFoundError, ShardUnavailableError } from '../errors.js';
import { rendezvousShard, type Candidate } from '../placement.js';
import {
  activeShardRows,
  beatShard,
  markShardDraining,
  registerShard,
  shardEndpointRows,
  shardExists,
  shardIdsSeenSince,
  shardRowsWithSourceCounts,
  shardStateRow,
} from './shard-rows.js';
import { askMove, askMoveOff, callOffMove, countSourcesOn, placeIfUnplaced, sourcesPlacedOn, unplacedSources } from './source-placement.js';

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

/** A heartbeat: shard `id` is alive, its mirrors take `bytes`, and `worker` is the one beating. */
export interface ShardHeartbeat {
  id: string;
  bytes: number;
  worker: ShardWorker;
}

/** Where to reach a shard's worker for reads, and whether it is up. */
export interface ShardEndpoint {
  id: string;
  state: ShardState;
  /** Null when its worker runs no internal endpoint. */
  endpoint: string | null;
}

/** A shard's liveness, for the metrics: its state and how long ago its worker last beat. */
export interface ShardHealth {
  id: string;
  state: ShardState;
  heartbeatAgeMs: number;
}

/** Places this many unplaced sources a statement. */
const PLACE_BATCH = 500;

/**
 * The storage shards (migration 008) and where sources live: workers
 * register and heartbeat their shard; a source is placed on an active shard
 * when it is added, by weighted rendezvous hashing, and stays there until it
 * is moved on purpose. The statements are in shard-rows.ts (the `shards`
 * table) and source-placement.ts (the sources' placement columns).
 */
export class ShardRepository {
  constructor(
    readonly db: Kysely<Schema>,
    /**
     * A shard whose worker was not seen for this long is down (it gets no new
     * sources, reads are not forwarded to it). The app passes 2 × the lease
     * ttl: workers beat every ttl/3, so a live worker is called down only
     * after missing about six beats in a row (a slow database, a long
     * pause), never for one late beat; and a worker that really stopped is
     * called down only after the leases it held have expired (a lease lives
     * one ttl past its last renewal).
     */
    private readonly downAfterMs: number,
  ) {}

  /**
   * Records that a worker owns shard `id` (created active, or taken over with its state kept: a
   * draining shard stays draining when its worker restarts).
   */
  async register(shard: ShardRegistration, now = Date.now()): Promise<void> {
    await registerShard(this.db, { id: shard.id, node: shard.node, dataDir: shard.dataDir, weight: shard.weight ?? 1, endpoint: shard.endpoint ?? null }, now);
  }

  /**
   * The worker of shard `beat.id` is alive; `beat.bytes` is what its mirrors
   * take now. The beating worker's `node` and `endpoint` are written too,
   * not only at register: several workers may serve one shard (same shard
   * id, same data dir), and when the one that registered last stops, the row
   * would name it, and api processes forward reads to its dead endpoint, for
   * good. With each beat naming its worker, a survivor's next beat (every
   * ttl/3) puts itself back. Live workers take turns in the row; any of them
   * can answer.
   */
  async heartbeat(beat: ShardHeartbeat, now = Date.now()): Promise<void> {
    await beatShard(this.db, { id: beat.id, bytes: beat.bytes, node: beat.worker.node, endpoint: beat.worker.endpoint ?? null }, now);
  }

  /** Every shard with its sources counted, by id. */
  async list(now = Date.now()): Promise<ShardInfo[]> {
    const rows = await shardRowsWithSourceCounts(this.db);
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
    const rows = await shardEndpointRows(this.db, id);
    return rows.map((row) => ({ id: row.id, state: this.#state(row.state, Number(row.last_seen_at), now), endpoint: row.endpoint }));
  }

  /** Every shard's state and heartbeat age, by id (cluster/metrics.ts, at each scrape). */
  async health(now = Date.now()): Promise<ShardHealth[]> {
    const rows = await shardEndpointRows(this.db, undefined);
    return rows.map((row) => ({ id: row.id, state: this.#state(row.state, Number(row.last_seen_at), now), heartbeatAgeMs: Math.max(0, now - Number(row.last_seen_at)) }));
  }

  /** The ids of the shards whose workers are alive (active or draining, seen lately). */
  async live(now = Date.now()): Promise<string[]> {
    return shardIdsSeenSince(this.db, now - this.downAfterMs);
  }

  /** The shards new sources may go to: active, and seen lately. */
  async candidates(now = Date.now()): Promise<Candidate[]> {
    const rows = await activeShardRows(this.db, now - this.downAfterMs);
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
      const rows = await unplacedSources(this.db, PLACE_BATCH);
      if (rows.length === 0) return placed;
      for (const row of rows) {
        if (await placeIfUnplaced(this.db, Number(row.id), rendezvousShard(row.name, candidates))) placed.push(Number(row.id));
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
    if (await askMove(this.db, id, target)) return true;
    // Already there: a move to it asked before is called off.
    await callOffMove(this.db, id);
    return false;
  }

  /**
   * Marks shard `id` draining (it takes no new sources) and asks every source
   * on it to move to the other active shards (rendezvous among them). Returns
   * the ids of the sources asked to move.
   * @throws ShardNotFoundError, NoOtherShardError
   */
  async drain(id: string, now = Date.now()): Promise<number[]> {
    if (!(await shardExists(this.db, id))) throw new ShardNotFoundError(id);
    const others = (await this.candidates(now)).filter((candidate) => candidate.id !== id);
    if (others.length === 0) throw new NoOtherShardError(id);
    await markShardDraining(this.db, id);
    const rows = await sourcesPlacedOn(this.db, id);
    const moving: number[] = [];
    for (const row of rows) {
      await askMoveOff(this.db, { sourceId: Number(row.id), from: id, to: rendezvousShard(row.name, others) });
      moving.push(Number(row.id));
    }
    return moving;
  }

  /** Sources still placed on shard `id`. */
  async sourcesOn(id: string): Promise<number> {
    return countSourcesOn(this.db, id);
  }

  /** @throws ShardNotFoundError, ShardUnavailableError unless shard `id` is active and seen. */
  async #takingSources(id: string, now: number): Promise<void> {
    const row = await shardStateRow(this.db, id);
    if (!row) throw new ShardNotFoundError(id);
    const state = this.#state(row.state, Number(row.last_seen_at), now);
    if (state !== 'active') throw new ShardUnavailableError(id, state);
  }

  /** The state a shard is in at `now`: as stored when draining, else down once its worker has been silent for longer than downAfterMs. */
  #state(stored: string, lastSeenAt: number, now: number): ShardState {
    if (stored === 'draining') return 'draining';
    return now - lastSeenAt > this.downAfterMs ? 'down' : 'active';
  }
}
