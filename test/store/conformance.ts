import { afterAll, beforeAll, beforeEach, describe } from 'vitest';
import type { Database } from '../../src/store/database.js';
import { RegistryRepository } from '../../src/replication/store/registry.js';
import { SourceRepository, type CreateSourceInput } from '../../src/replication/store/sources.js';
import type { SourceWithRegistry } from '../../src/store/types.js';
import type { StoreBackend, StoreTarget } from './backends.js';
import { describeAttempts } from './suite/attempts.js';
import { describeMigrations } from './suite/migrations.js';
import { describeRegistry } from './suite/registry.js';
import { describeScheduling } from './suite/scheduling.js';
import { describeSources } from './suite/sources.js';
import { describeWebhookDeliveries } from './suite/webhook-deliveries.js';

/** What every part of the suite works with; valid inside tests (set up in beforeAll). */
export interface StoreContext {
  readonly backend: StoreBackend;
  readonly target: StoreTarget;
  readonly database: Database;
  readonly sources: SourceRepository;
  readonly registry: RegistryRepository;
  /** Creates a source named `name` with a URL derived from it. */
  add(name: string, input?: Partial<CreateSourceInput>): Promise<SourceWithRegistry>;
}

/** Runs the store conformance suite against one dialect, in a database of its own. */
export function describeStoreConformance(backend: StoreBackend): void {
  describe(`store conformance: ${backend.name}`, () => {
    let target: StoreTarget | undefined;
    let database: Database | undefined;
    let sources: SourceRepository;
    let registry: RegistryRepository;

    beforeAll(async () => {
      target = await backend.fresh();
      database = await target.open();
      sources = new SourceRepository(database);
      registry = new RegistryRepository(database);
    });
    afterAll(async () => {
      await database?.close();
      await target?.dispose();
    });
    beforeEach(async () => {
      // Cascades to registry and sync_attempts.
      await database!.db.deleteFrom('sources').execute();
    });

    const ctx: StoreContext = {
      backend,
      get target() {
        return target!;
      },
      get database() {
        return database!;
      },
      get sources() {
        return sources;
      },
      get registry() {
        return registry;
      },
      add: (name, input = {}) => sources.create({ name, url: `https://git.example.com/${name}.git`, ...input }),
    };

    describeMigrations(ctx);
    describeSources(ctx);
    describeRegistry(ctx);
    describeScheduling(ctx);
    describeAttempts(ctx);
    describeWebhookDeliveries(ctx);
  });
}
