import { Migrator, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FeedSecretUnavailableError } from '../../src/credentials/errors.js';
import { connectPostgres, connectSqlite, type Connection } from '../../src/store/connect.js';
import { openDatabase } from '../../src/store/database.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { createTestDatabase, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { NatsListener } from './sinks/nats-listener.js';

/** The stored `secret_env` of each feed before migration 012, and the feed secret name it must become. */
const ROWS: { name: string; secretEnv: string | null; secret: string | null }[] = [
  // What defines a feed secret now: that secret, by its name.
  { name: 'mapped', secretEnv: 'FORGESYNC_FEED_SECRET_NATS_TOKEN', secret: 'nats_token' },
  // Any other variable: kept as a name, which resolves only if the operator defines a feed secret of that name.
  { name: 'kept', secretEnv: 'FORGESYNC_CREDENTIAL_GITHUB_BOT', secret: 'FORGESYNC_CREDENTIAL_GITHUB_BOT' },
  { name: 'bare', secretEnv: 'FORGESYNC_FEED_SECRET_', secret: 'FORGESYNC_FEED_SECRET_' },
  { name: 'none', secretEnv: null, secret: null },
];
const BEFORE = '011_registry_verify_index';

function connect(kind: 'sqlite' | 'postgres', url: string): Promise<Connection> {
  return kind === 'sqlite' ? Promise.resolve(connectSqlite(url)) : connectPostgres(url, undefined);
}

function migrator(connection: Connection, kind: 'sqlite' | 'postgres'): Migrator {
  return new Migrator({ db: connection.db, provider: migrationProvider(kind), migrationTableSchema: connection.migrationSchema });
}

/** A registry migrated up to the one before 012, holding a feed per row of ROWS on `sink`. */
async function oldRegistry(kind: 'sqlite' | 'postgres', url: string, sink: string): Promise<void> {
  const connection = await connect(kind, url);
  try {
    const { error } = await migrator(connection, kind).migrateTo(BEFORE);
    if (error) throw error;
    const db = connection.db as unknown as Kysely<any>;
    const now = Date.now();
    for (const row of ROWS) {
      await db
        .insertInto('feeds')
        .values({ name: row.name, sink, secret_env: row.secretEnv, batch: 1, cursor: 0, full_requested_at: now, created_at: now, updated_at: now })
        .execute();
    }
  } finally {
    await connection.close();
  }
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`migration 012 on ${kind}: feeds name feed secrets, not environment variables`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
    });
    afterAll(async () => {
      await database?.drop();
    });

    it('maps FORGESYNC_FEED_SECRET_<NAME> to <name>, keeps any other name, and goes back down', async () => {
      await oldRegistry(kind, database.url, 'nats://127.0.0.1:4222/forgesync.changes');
      const opened = await openDatabase(database.url);
      try {
        const rows = await opened.db.selectFrom('feeds').select(['name', 'secret']).orderBy('name').execute();
        expect(rows).toEqual([...ROWS].sort((a, b) => a.name.localeCompare(b.name)).map(({ name, secret }) => ({ name, secret })));
      } finally {
        await opened.close();
      }
      const connection = await connect(kind, database.url);
      try {
        const { error } = await migrator(connection, kind).migrateTo(BEFORE);
        expect(error).toBeUndefined();
        const db = connection.db as unknown as Kysely<any>;
        const back = await db.selectFrom('feeds').select(['name', 'secret_env']).where('name', 'in', ['mapped', 'none']).orderBy('name').execute();
        expect(back).toEqual([
          { name: 'mapped', secret_env: 'FORGESYNC_FEED_SECRET_NATS_TOKEN' },
          { name: 'none', secret_env: null },
        ]);
      } finally {
        await connection.close();
      }
    });
  });
}

describe('feeds migrated from secretEnv, delivering to a hostile NATS listener', () => {
  let database: TestDatabase;
  let nats: NatsListener;
  const credential = testSecret('MIGRATED_CREDENTIAL', 'ghp_');
  const natsToken = testSecret('MIGRATED_NATS_TOKEN');
  let environment: Record<string, string>;

  beforeAll(async () => {
    nats = await NatsListener.start();
    environment = {
      FORGESYNC_CREDENTIAL_GITHUB_BOT: credential,
      FORGESYNC_CREDENTIAL_GITHUB_BOT_HOSTS: `127.0.0.1:${nats.port}`,
      FORGESYNC_FEED_SECRET_NATS_TOKEN: natsToken,
      FORGESYNC_FEED_SECRET_NATS_TOKEN_HOSTS: `127.0.0.1:${nats.port}`,
    };
    Object.assign(process.env, environment);
    database = await createTestDatabase('sqlite');
  });
  afterAll(async () => {
    for (const name of Object.keys(environment ?? {})) delete process.env[name];
    await nats?.stop();
    await database?.drop();
  });

  it('sends the mapped feed secret to its bound host; a feed that named any other variable sends nothing', async () => {
    await oldRegistry('sqlite', database.url, `nats://127.0.0.1:${nats.port}/forgesync.changes`);
    const { app } = await openTestForgesync(testConfig(database.url, { FORGESYNC_FEED_POLL_INTERVAL: '10m', FORGESYNC_FEED_TIMEOUT: '3s' }));
    try {
      const upstream = Upstream.create();
      await app.replication.addSource({ name: 'migrated-src', url: upstream.bare });
      await app.replication.sync('migrated-src');

      // Even a credential's variable bound to this very host: not a feed secret, so nothing is sent.
      for (const name of ['kept', 'bare']) {
        await expect(app.feeds.resync(name, { wait: true }), name).rejects.toBeInstanceOf(FeedSecretUnavailableError);
        expect((await app.feeds.status(name)).lastError).toBe(new FeedSecretUnavailableError().message);
      }
      expect(nats.connections).toBe(0);

      expect((await app.feeds.resync('mapped', { wait: true })).secret).toBe('nats_token');
      expect(nats.connects.map((connect) => connect.auth_token)).toEqual([natsToken]);
      expect(JSON.stringify(nats.connects)).not.toContain(credential);
    } finally {
      await app.close();
    }
  });
});
