import type { Database } from '../../store/database.js';
import { prepared, type PreparedQuery } from '../../store/sql.js';

/**
 * How long after it expired a claim is kept before prune() deletes it. A
 * claim is tested against the clock of the process receiving a replay, but
 * deleted by the clock of whichever process prunes: the margin is how far
 * the clocks of the processes sharing the registry may disagree.
 */
export const DELIVERY_PRUNE_MARGIN_MS = 5 * 60_000;

/** How often one process deletes expired claims (pruneIfDue): one indexed DELETE a minute, not one per delivery. */
export const DELIVERY_PRUNE_EVERY_MS = 60_000;

/** A delivery id this process claimed; give it back with release() when acting on it failed. */
export interface DeliveryClaim {
  provider: string;
  id: string;
  receivedAt: number;
}

/**
 * Webhook delivery ids that were acted on, in the registry database so that
 * every process sharing it sees them: the first claim of an id wins, a
 * replay (the same id again) is told it is a duplicate. A claim lasts until
 * the delivery's own timestamp leaves the receiver's tolerance window, after
 * which the timestamp check refuses a replay by itself.
 */
export class WebhookDeliveryRepository {
  readonly #claim: PreparedQuery<[provider: string, id: string, receivedAt: number, expiresAt: number, nowMs: number], { delivery_id: string }>;
  readonly #release: PreparedQuery<[provider: string, id: string, receivedAt: number], unknown>;
  readonly #prune: PreparedQuery<[beforeMs: number], unknown>;
  #nextPruneAt = 0;

  constructor(database: Pick<Database, 'db'>) {
    const db = database.db;
    /*
     * Claims one delivery id, atomically (one statement, so two processes
     * receiving the same delivery at once cannot both win).
     *   inputs   provider, delivery id, now (ms) as received_at, expiry (ms), now (ms)
     *   stores   (provider, delivery_id) → received_at, expires_at; an existing row is
     *            taken over only when it expired before `now`: the delivery it stood for
     *            can no longer pass the timestamp check, so the id is free again (a
     *            sender's retry long after the window)
     *   returns  the row's delivery_id when this call inserted or took it over;
     *            no row when a live claim exists (a duplicate)
     */
    this.#claim = prepared(db, (arg) =>
      db
        .insertInto('webhook_deliveries')
        .values({ provider: arg(0), delivery_id: arg(1), received_at: arg(2), expires_at: arg(3) })
        .onConflict((conflict) =>
          conflict
            .columns(['provider', 'delivery_id'])
            .doUpdateSet({ received_at: (eb) => eb.ref('excluded.received_at'), expires_at: (eb) => eb.ref('excluded.expires_at') })
            .where('webhook_deliveries.expires_at', '<', arg(4)),
        )
        .returning('delivery_id'),
    );
    /*
     * Gives a claim back.
     *   inputs   provider, delivery id, the claim's received_at
     *   deletes  that row, only if it is still this claim (not one taken over since)
     */
    this.#release = prepared(db, (arg) =>
      db.deleteFrom('webhook_deliveries').where('provider', '=', arg(0)).where('delivery_id', '=', arg(1)).where('received_at', '=', arg(2)),
    );
    /*
     * Deletes expired claims.
     *   inputs   a time (ms): the caller's now minus DELIVERY_PRUNE_MARGIN_MS
     *   deletes  every row whose expires_at is before it (an index range scan)
     *   returns  numAffectedRows
     */
    this.#prune = prepared(db, (arg) => db.deleteFrom('webhook_deliveries').where('expires_at', '<', arg(0)));
  }

  /**
   * Claims delivery `id` of `provider` until `expiresAt`.
   * @returns the claim when this is the first delivery of the id (act on it),
   *   null when a claim that has not expired exists (a duplicate: do nothing).
   */
  async claim(provider: string, id: string, expiresAt: Date, now: Date = new Date()): Promise<DeliveryClaim | null> {
    const receivedAt = now.getTime();
    const { rows } = await this.#claim.execute(provider, id, receivedAt, expiresAt.getTime(), receivedAt);
    return rows.length > 0 ? { provider, id, receivedAt } : null;
  }

  /** Gives `claim` back, so the sender's retry of the delivery is acted on. */
  async release(claim: DeliveryClaim): Promise<void> {
    await this.#release.execute(claim.provider, claim.id, claim.receivedAt);
  }

  /** Deletes claims that expired more than DELIVERY_PRUNE_MARGIN_MS before `now`; returns how many. */
  async prune(now: Date = new Date()): Promise<number> {
    const result = await this.#prune.execute(now.getTime() - DELIVERY_PRUNE_MARGIN_MS);
    return Number(result.numAffectedRows ?? 0);
  }

  /** prune() when DELIVERY_PRUNE_EVERY_MS passed since this repository last did (at once the first time); else null. */
  async pruneIfDue(now: Date = new Date()): Promise<number | null> {
    if (now.getTime() < this.#nextPruneAt) return null;
    this.#nextPruneAt = now.getTime() + DELIVERY_PRUNE_EVERY_MS;
    return this.prune(now);
  }
}
