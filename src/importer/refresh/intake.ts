import type { Kysely } from 'kysely';
import type { ProjectDelivery } from '../../replication/api.js';
import { guardedList, runBatch } from '../../store/batch.js';
import type { Schema } from '../../store/types.js';
import { Batcher } from '../../util/batcher.js';
import { importsOfRepository, recordRefreshesSteps } from '../store/refreshes.js';

/** Deliveries whose refreshes go in one transaction at most. */
const INTAKE_BATCH = 200;

/**
 * Records what GitHub's project deliveries name, for every import of the
 * repository, before they are answered: one transaction for the
 * deliveries that arrived together (a group commit, util/batcher.ts), then
 * one nudge per import. Answers each delivery with the names of the
 * imports that will fetch its objects again (none: no import follows that
 * repository, nothing recorded).
 */
export class RefreshIntake {
  readonly #batcher: Batcher<ProjectDelivery, string[]>;

  constructor(
    db: Kysely<Schema>,
    /** Wakes whoever refreshes import `importId` (a job; coalesced per import by the transport). */
    nudge: (importId: number) => Promise<void>,
  ) {
    this.#batcher = new Batcher(async (deliveries) => {
      const imports = new Map<number, { id: number; name: string }[]>();
      for (const id of new Set(deliveries.map((delivery) => delivery.repositoryId))) imports.set(id, await importsOfRepository(db, id));
      // One row per (import, target): the last delivery's hint wins, as a later delivery's would in the table.
      const rows = new Map<string, { importId: number; target: string; detail: string }>();
      for (const delivery of deliveries) {
        for (const { id } of imports.get(delivery.repositoryId)!) {
          for (const target of delivery.targets) rows.set(`${id} ${target.key}`, { importId: id, target: target.key, detail: JSON.stringify(target.detail) });
        }
      }
      if (rows.size > 0) await runBatch(db, guardedList({ guards: [], steps: recordRefreshesSteps(db, [...rows.values()], Date.now()) }));
      const nudged = new Set([...rows.values()].map((row) => row.importId));
      await Promise.all([...nudged].map((id) => nudge(id)));
      return deliveries.map((delivery) => imports.get(delivery.repositoryId)!.map((found) => found.name));
    }, { maxBatch: INTAKE_BATCH });
  }

  /** Records `delivery` (see the class); resolves once it is durable and its imports nudged. */
  receive(delivery: ProjectDelivery): Promise<string[]> {
    return this.#batcher.submit(delivery);
  }
}
