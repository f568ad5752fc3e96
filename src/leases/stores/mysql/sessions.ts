import mysql, { type Connection, type ConnectionOptions, type PrepareStatementInfo } from 'mysql2';
import type { LeaseHolder } from '../../types.js';

export type MysqlError = Error & { errno?: number; code?: string; fatal?: boolean };

/** Most server sessions open at once; every held lease occupies one. Past it, acquires fail rather than queue. */
const MAX_SESSIONS = 1_000;
/** Idle sessions kept however long they idle; more are closed after IDLE_TIMEOUT_MS. */
const MAX_IDLE = 8;
const IDLE_TIMEOUT_MS = 30_000;
/** Bound on a new session's setup statement. */
const SETUP_TIMEOUT_MS = 10_000;
/** How often the watchdog looks for statements past their time limit. */
const WATCHDOG_MS = 250;

/**
 * One server session: a plain mysql2 connection (callback API) plus what the
 * store keeps about it. Statements run one at a time per session.
 */
export class Session {
  /** Server session id, = CONNECTION_ID(), as recorded in a row's conn_id. */
  readonly threadId: number;
  /** Set once the connection ended or was dropped; never reused then. */
  gone = false;
  idleSince = 0;
  /** Date.now() by which the statement in flight must be answered; 0 when none is. */
  deadline = 0;
  /** The lease pinned to this session, if any (see PinnedSessions): its token, what its row says, its `lost`. */
  leaseToken: string | undefined;
  lease: LeaseHolder | undefined;
  leaseLost: AbortController | undefined;
  #fail: ((err: Error) => void) | undefined;
  /** This session's prepared statements, by text; executed directly, skipping mysql2's per-call lookup. */
  readonly #prepared = new Map<string, PrepareStatementInfo>();

  constructor(readonly conn: Connection) {
    this.threadId = conn.threadId;
  }

  /**
   * Runs a text-protocol query (multi-statement allowed), or with `prepared`
   * a prepared statement (prepared on first use in this session). A statement
   * still running after `timeoutMs` fails with a fatal
   * PROTOCOL_SEQUENCE_TIMEOUT and the session is dropped (see Sessions).
   */
  run<T>(sql: string, values: unknown[], timeoutMs: number, prepared = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.deadline = Date.now() + timeoutMs;
      this.#fail = reject;
      const done = (err: Error | null, result: unknown) => {
        this.deadline = 0;
        this.#fail = undefined;
        if (err) reject(err);
        else resolve(result as T);
      };
      if (!prepared) {
        this.conn.query({ sql, values }, done);
        return;
      }
      const statement = this.#prepared.get(sql);
      if (statement) {
        statement.execute(values, done);
        return;
      }
      this.conn.prepare(sql, (err, prepared) => {
        if (err) return done(err, undefined);
        this.#prepared.set(sql, prepared);
        prepared.execute(values, done);
      });
    });
  }

  /** Fails the statement in flight (the session is being dropped). */
  failPending(err: Error): void {
    const fail = this.#fail;
    this.deadline = 0;
    this.#fail = undefined;
    fail?.(err);
  }
}

/**
 * The store's server sessions: a free list handed out last-in first-out so
 * the hot session stays hot. A lease pins one while it is held; everything
 * else borrows one per call.
 *
 * A plain list rather than mysql2's Pool: taking a session is a pop, with no
 * event, nextTick or promise wrapper per lease, one 'end'/'error' listener
 * pair per session for its whole life, and one watchdog timer per store
 * instead of a timer per statement.
 */
export class Sessions {
  readonly #options: ConnectionOptions;
  readonly #idle: Session[] = [];
  readonly #all = new Map<number, Session>();
  readonly #timer: NodeJS.Timeout;
  #opening = 0;
  #closed = false;
  #lastTrim = Date.now();

  /**
   * `onGone` is told about every session that ends or is dropped, once;
   * `setup`, if any, runs on every new session before it is used (its
   * limits: see sql.ts sessionSetup).
   */
  constructor(
    options: ConnectionOptions,
    private readonly onGone: (session: Session, reason: Error) => void = () => {},
    private readonly setup?: string,
  ) {
    this.#options = options;
    this.#timer = setInterval(() => this.#watch(), WATCHDOG_MS);
    this.#timer.unref();
  }

  /** An idle session, or undefined. Synchronous so the hot path pays no extra await. */
  idle(): Session | undefined {
    return this.#idle.pop();
  }

  /** The open session with this server id, if it is ours. */
  byThread(threadId: number): Session | undefined {
    return this.#all.get(threadId);
  }

  /** Opens a new session. */
  async connect(): Promise<Session> {
    if (this.#closed) throw new Error('the lease store is closed');
    if (this.#all.size + this.#opening >= MAX_SESSIONS) {
      throw new Error(`all ${MAX_SESSIONS} MySQL sessions of this lease store are in use`);
    }
    this.#opening++;
    const conn = mysql.createConnection(this.#options);
    // A dying connection (server restart, KILL, network loss) must never
    // crash the process: 'error' always has this listener.
    let session: Session | undefined;
    const onEnd = (err?: Error) => {
      if (session) this.#drop(session, new Error('connection to mysql lost', err ? { cause: err } : undefined));
    };
    conn.on('error', onEnd).on('end', onEnd);
    try {
      await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
    } catch (err) {
      destroyConnection(conn);
      throw err;
    } finally {
      this.#opening--;
    }
    session = new Session(conn);
    if (this.#closed) {
      destroyConnection(conn);
      throw new Error('the lease store is closed');
    }
    this.#all.set(session.threadId, session);
    if (this.setup) {
      try {
        await session.run(this.setup, [], SETUP_TIMEOUT_MS);
      } catch (err) {
        this.destroy(session);
        throw err;
      }
    }
    return session;
  }

  /** Returns a session that holds no lock to the free list. */
  give(session: Session): void {
    if (session.gone) return;
    if (this.#closed) return this.end(session);
    session.idleSince = Date.now();
    this.#idle.push(session);
  }

  /**
   * Drops a session; the server then frees any lock it held. A statement
   * still waiting on it fails with a fatal "connection lost" error rather
   * than never settling (which is what mysql2's destroy() would leave it to).
   */
  destroy(session: Session, reason: Error = new Error('the session was dropped')): void {
    this.#drop(session, reason);
    destroyConnection(session.conn);
  }

  /** Closes a session politely (COM_QUIT); for one that holds no lock and is not wanted back. */
  end(session: Session, reason: Error = new Error('the session was closed')): void {
    this.#drop(session, reason);
    session.conn.end(() => {});
  }

  /** Closes the idle sessions and refuses new ones; sessions given back later are closed. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const session of this.#idle.splice(0)) this.end(session);
  }

  #drop(session: Session, reason: Error): void {
    if (session.gone) return;
    session.gone = true;
    this.#all.delete(session.threadId);
    const at = this.#idle.lastIndexOf(session);
    if (at >= 0) this.#idle.splice(at, 1);
    session.failPending(Object.assign(new Error('connection to mysql lost', { cause: reason }), { fatal: true }));
    this.onGone(session, reason);
  }

  #watch(): void {
    const now = Date.now();
    for (const session of this.#all.values()) {
      if (session.deadline !== 0 && now > session.deadline) {
        const err: MysqlError = new Error('Query inactivity timeout');
        err.code = 'PROTOCOL_SEQUENCE_TIMEOUT';
        err.fatal = true;
        session.failPending(err);
        this.destroy(session, err);
      }
    }
    if (now - this.#lastTrim >= IDLE_TIMEOUT_MS / 3) {
      this.#lastTrim = now;
      // The oldest idle sessions are at the bottom of the list.
      const cutoff = now - IDLE_TIMEOUT_MS;
      while (this.#idle.length > MAX_IDLE && this.#idle[0]!.idleSince < cutoff) this.end(this.#idle[0]!);
    }
  }
}

function destroyConnection(conn: Connection): void {
  // Destroying the socket (not mysql2's destroy(), which marks the connection
  // closing first) makes mysql2 fail any command in flight.
  const stream = (conn as unknown as { stream?: { destroy(): void } }).stream;
  if (stream) stream.destroy();
  else conn.destroy();
}

/**
 * The session is unusable: fatal protocol/network error, or a statement
 * timeout (after which the session's state is unknown, so it is dropped).
 */
export function isBroken(err: unknown): boolean {
  const e = err as MysqlError | undefined;
  return e?.fatal === true || e?.code === 'PROTOCOL_SEQUENCE_TIMEOUT';
}
