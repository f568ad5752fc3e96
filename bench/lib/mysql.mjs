// MySQL / MariaDB: forgesync's store vs mysql2 doing SELECT GET_LOCK(?, 0) +
// SELECT RELEASE_LOCK(?) itself. GET_LOCK belongs to the session and is
// re-entrant there, so the raw side needs one connection per concurrent
// worker: sequential uses one connection, contended one per worker (opened up
// front, not counted). forgesync takes a pooled connection per acquire and
// keeps it pinned until release, as it always does.
import mysql from 'mysql2/promise';
import { forgesyncContender } from './forgesync.mjs';
import { unreachable } from './util.mjs';

function connect(url) {
  return mysql.createConnection({ uri: url.replace(/^mariadb:/i, 'mysql:'), connectTimeout: 3_000 });
}

async function rawContender(url, workers) {
  const connections = [];
  for (let i = 0; i < workers; i++) {
    const conn = await connect(url);
    conn.on('error', () => {});
    connections.push(conn);
  }
  const sessionOn = (conn) => ({
    async tryAcquire(key) {
      const [rows] = await conn.query('SELECT GET_LOCK(?, 0) AS got', [key]);
      return rows[0].got === 1 ? key : null;
    },
    async release(key) {
      const [rows] = await conn.query('SELECT RELEASE_LOCK(?) AS freed', [key]);
      if (rows[0].freed !== 1) throw new Error(`raw mysql: ${key} was not ours any more`);
    },
  });
  const sessions = connections.map(sessionOn);
  return {
    name: 'raw',
    role: 'baseline',
    describe: 'mysql2: SELECT GET_LOCK(?, 0) + SELECT RELEASE_LOCK(?), one connection per worker (no table, no fence, no owner)',
    sessions: (n) => {
      if (n > sessions.length) throw new Error(`raw mysql has ${sessions.length} connections, ${n} asked for`);
      return sessions.slice(0, n);
    },
    close: async () => {
      await Promise.allSettled(connections.map((c) => c.end()));
    },
  };
}

export async function openMysql(ctx, url) {
  let admin;
  try {
    admin = await connect(url);
    admin.on('error', () => {});
  } catch (error) {
    throw unreachable(error);
  }
  const [[probe]] = await admin.query(
    `SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'forgesync_leases'`,
  );
  const forgesyncTableExisted = Number(probe.n) > 0;
  const notes = [];
  if (forgesyncTableExisted) {
    // Rows a killed run left behind; never a lease that may still be held.
    const [stale] = await admin.query(
      `DELETE FROM forgesync_leases WHERE lease_key LIKE ? AND (token IS NULL OR expires_at < UTC_TIMESTAMP() - INTERVAL 1 MINUTE)`,
      [`${ctx.keyNamespace}%`],
    );
    if (stale.affectedRows) notes.push(`swept ${stale.affectedRows} rows left by an earlier interrupted run`);
  }
  const contenders = [];
  const cleanup = async () => {
    for (const c of contenders) await c.close().catch(() => {});
    const [removed] = await admin.query(`DELETE FROM forgesync_leases WHERE lease_key LIKE ?`, [`${ctx.keyPrefix}%`]).catch(() => [{ affectedRows: 0 }]);
    let dropped = '';
    if (!forgesyncTableExisted) {
      const [[left]] = await admin.query(`SELECT COUNT(*) AS n FROM forgesync_leases`).catch(() => [[{ n: 1 }]]);
      if (Number(left.n) === 0) {
        await admin.query(`DROP TABLE IF EXISTS forgesync_leases`);
        dropped = ', dropped forgesync_leases';
      }
    }
    await admin.end().catch(() => {});
    return `removed ${removed.affectedRows} forgesync rows${dropped}`;
  };
  const factories = {
    forgesync: (c) => forgesyncContender(url, c),
    raw: (c) => rawContender(url, c.workers),
  };
  try {
    for (const make of Object.values(factories)) contenders.push(await make(ctx));
  } catch (error) {
    await cleanup().catch(() => {});
    throw error;
  }
  const [[server]] = await admin.query(
    `SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush, @@log_bin AS log_bin,
       (SELECT ENGINE FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'forgesync_leases') AS engine`,
  );
  notes.push(
    `server ${server.version}, innodb_flush_log_at_trx_commit=${server.flush}, log_bin=${server.log_bin}; raw writes no rows, forgesync keeps a row per key (fence, owner, ttl) beside its GET_LOCK, in a ${server.engine} table`,
  );
  return { url, contenders, factories, cleanup, notes };
}
