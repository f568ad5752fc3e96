// Private PostgreSQL and Redis instances for one test file, on free ports and
// in temp dirs of their own. The distributed-mode proof restarts them (Redis
// with its state lost, PostgreSQL with a fast shutdown); doing that to the
// machine's shared services (6379, 5432) would break the other test files
// running in parallel, so the proof never touches those.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually as until } from '../eventually.js';
import { freePort } from '../free-port.js';

const run = promisify(execFile);

/** Sends one raw line over TCP and resolves with the first chunk answered (null when nothing listens). */
function ask(port: number, line: string): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (value: string | null) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(1_000, () => done(null));
    socket.once('error', () => done(null));
    socket.once('connect', () => socket.write(line));
    socket.once('data', (chunk) => done(chunk.toString()));
  });
}

/** `redis-server` in the foreground on a free port, nothing persisted: a restart loses every key. */
export class RedisInstance {
  #child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    /** More redis-server options (`--maxmemory-policy allkeys-lru`). */
    private readonly args: readonly string[],
  ) {}

  static async start(options: { args?: readonly string[] } = {}): Promise<RedisInstance> {
    if (!(await onPath('redis-server'))) throw new Error('redis-server is not installed (apt-get install redis-server): the cluster proof runs a private Redis it can restart');
    const redis = new RedisInstance(await freePort(), options.args ?? []);
    await redis.#spawn();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async #spawn(): Promise<void> {
    this.#child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', ...this.args], { stdio: 'ignore' });
    await until(`redis on ${this.port}`, async () => (await ask(this.port, 'PING\r\n'))?.startsWith('+PONG') ?? false);
  }

  /** Kills it (SIGKILL: as a crash would) and starts it again on the same port, empty. */
  async restart(): Promise<void> {
    await this.stop();
    await this.#spawn();
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // The port is free once nothing answers on it.
    await until(`redis on ${this.port} to go away`, async () => (await ask(this.port, 'PING\r\n')) === null);
  }
}

/**
 * A PostgreSQL cluster of its own: initdb into a temp dir owned by the
 * `postgres` user (the server refuses to run as root), trust auth, socket
 * in the same dir, started and stopped with pg_ctl.
 */
export class PostgresInstance {
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly bin: string,
  ) {}

  static async start(): Promise<PostgresInstance> {
    const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
    const bin = versions.map((version) => join('/usr/lib/postgresql', version, 'bin')).find((dir) => existsSync(join(dir, 'initdb')));
    if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql/<version>/bin (apt-get install postgresql): the cluster proof runs a private cluster it can restart');
    if (!(await onPath('runuser'))) throw new Error('runuser is missing: the private PostgreSQL must run as the postgres user');
    const { stdout: uid } = await run('id', ['-u', 'postgres']).catch(() => {
      throw new Error('there is no "postgres" user to run the private PostgreSQL as');
    });
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-pg-'));
    chownSync(dir, Number(uid.trim()), Number(gid.trim()));
    const instance = new PostgresInstance(await freePort(), dir, bin);
    try {
      await instance.#asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync']);
      await instance.#start();
    } catch (error) {
      await instance.stop();
      throw new Error(`the private PostgreSQL did not start: ${(error as { stderr?: string }).stderr || (error as Error).message}`);
    }
    return instance;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  #asPostgres(program: string, args: string[]) {
    return run('runuser', ['-u', 'postgres', '--', join(this.bin, program), ...args], { cwd: this.dir });
  }

  async #start(): Promise<void> {
    // fsync off: the data is thrown away after the test, and the 2-core machine is busy enough.
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await this.#asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-o', options, '-l', join(this.dir, 'server.log'), '-w', '-t', '30', 'start']);
  }

  /** Fast shutdown (every connection cut, as a failover or an upgrade does), then start again. */
  async restart(): Promise<void> {
    await this.#asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'fast', '-w', '-t', '30', 'stop']);
    await this.#start();
  }

  async stop(): Promise<void> {
    await this.#asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function onPath(program: string): Promise<boolean> {
  return run('sh', ['-c', `command -v ${program}`]).then(
    () => true,
    () => false,
  );
}
