// PostgreSQL: forgesync's store vs pg issuing the minimal upsert + release on
// its own small table. The raw side gets the same pool settings as forgesync
// (pg.Pool, max 10) and named prepared statements, i.e. its best case: both
// pay one pool checkout and one parsed-once statement per operation.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { forgesyncContender } from './forgesync.mjs';
import { unreachable } from './util.mjs';

export const RAW_TABLE = 'bench_raw_leases';

const RAW_ACQUIRE = {
  name: 'bench_raw_acquire',
  text: `INSERT INTO ${RAW_TABLE} AS l (key, token, expires_at)
    VALUES ($1, $2, now() + $3::integer * interval '1 millisecond')
    ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
    WHERE l.token IS NULL OR l.expires_at <= now()`,
};
const RAW_RELEASE = {
  name: 'bench_raw_release',
  text: `UPDATE ${RAW_TABLE} SET token = NULL, expires_at = NULL WHERE key = $1 AND token = $2`,
};

function newPool(url) {
  const pool = new pg.Pool({ connectionString: url, max: 10, idleTimeoutMillis: 10_000, connectionTimeoutMillis: 3_000 });
  pool.on('error', () => {});
  return pool;
}

function rawContender(pool, { ttlMs }) {
  const session = {
    async tryAcquire(key) {
      const token = randomUUID();
      const result = await pool.query({ ...RAW_ACQUIRE, values: [key, token, ttlMs] });
      return result.rowCount === 1 ? { key, token } : null;
    },
    async release(handle) {
      const result = await pool.query({ ...RAW_RELEASE, values: [handle.key, handle.token] });
      if (result.rowCount !== 1) throw new Error(`raw postgres: ${handle.key} was not ours any more`);
    },
  };
  return {
    name: 'raw',
    role: 'baseline',
    describe: `pg.Pool: INSERT…ON CONFLICT DO UPDATE…WHERE free/expired + UPDATE token=NULL (named statements, table ${RAW_TABLE})`,
    sessions: (n) => Array.from({ length: n }, () => session),
    close: () => pool.end(),
  };
}

export async function openPostgres(ctx, url) {
  const admin = newPool(url);
  let forgesyncTableExisted;
  try {
    const { rows } = await admin.query(`SELECT to_regclass('forgesync_leases') IS NOT NULL AS present`);
    forgesyncTableExisted = rows[0].present;
  } catch (error) {
    await admin.end().catch(() => {});
    throw unreachable(error);
  }
  const contenders = [];
  const cleanup = async () => {
    for (const c of contenders) await c.close().catch(() => {});
    const removed = await admin.query(`DELETE FROM forgesync_leases WHERE key LIKE $1`, [`${ctx.keyPrefix}%`]).catch(() => ({ rowCount: 0 }));
    await admin.query(`DELETE FROM ${RAW_TABLE} WHERE key LIKE $1`, [`${ctx.keyPrefix}%`]).catch(() => {});
    // Drop what this run created, unless someone else has rows in it by now.
    const dropped = [];
    for (const [table, created] of [[RAW_TABLE, true], ['forgesync_leases', !forgesyncTableExisted]]) {
      if (!created) continue;
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${table}`).catch(() => ({ rows: [{ n: 1 }] }));
      if (rows[0].n === 0) {
        await admin.query(`DROP TABLE IF EXISTS ${table}`);
        dropped.push(table);
      }
    }
    await admin.end().catch(() => {});
    return `removed ${removed.rowCount} forgesync rows${dropped.length ? `, dropped ${dropped.join(', ')}` : ''}`;
  };
  const notes = [];
  if (forgesyncTableExisted) {
    // Rows a killed run left behind; never a lease that may still be held.
    const stale = await admin.query(
      `DELETE FROM forgesync_leases WHERE key LIKE $1 AND (token IS NULL OR expires_at < now() - interval '1 minute')`,
      [`${ctx.keyNamespace}%`],
    );
    if (stale.rowCount) notes.push(`swept ${stale.rowCount} rows left by an earlier interrupted run`);
  }
  const factories = {
    forgesync: (c) => forgesyncContender(url, c),
    raw: async (c) => rawContender(newPool(url), c),
  };
  try {
    await admin.query(`CREATE TABLE IF NOT EXISTS ${RAW_TABLE} (key text PRIMARY KEY, token text, expires_at timestamptz)`);
    for (const make of Object.values(factories)) contenders.push(await make(ctx));
  } catch (error) {
    await cleanup().catch(() => {});
    throw error;
  }
  const settings = await admin.query(`SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit')`);
  notes.push(`server: ${settings.rows.map((r) => `${r.name}=${r.setting}`).join(', ')} (every statement is its own committed transaction, for all contenders)`);
  return { url, contenders, factories, cleanup, notes };
}
