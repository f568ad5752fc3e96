import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { PackObjectsHook } from '../upload-pack.js';
import type { PackCache } from './cache.js';
import { followEntry } from './entry.js';
import { perlHookCommand } from './perl-hook.js';
import type { PackCacheMetrics } from './metrics.js';
import { frame, FRAME_EXIT, FRAME_FILE, FRAME_SIZE, FRAME_STDERR, MAX_HEADER_BYTES, PackHookRequestError, parsePackObjectsArgs } from './protocol.js';

/*
 * The serving process's end of `uploadpack.packObjectsHook`: upload-pack
 * runs the hook (perl-hook.ts, or hook.cjs) instead of pack-objects, and
 * the hook hands its arguments and stdin to this server over a Unix socket
 * (in a directory only the service user may enter); the server answers with
 * the cache entry's file and how much of it is written, and the hook copies
 * those bytes to upload-pack itself (the pack never passes through here).
 * So the cache, its single flight and its budget live in one place however
 * many upload-packs run at once.
 *
 * Each upload-pack is started with a hook command naming a ticket of its
 * own, registered here until the upload-pack ends: the ticket says which
 * served view the request is for, so a hook never names a repository
 * itself. It is no secret (it shows in `ps`); the socket's directory is
 * what keeps other users out.
 */

/** The hook in node, next to this file in src/ and dist/ (copied there by scripts/copy-assets.mjs), where perl is missing. */
const HOOK_SCRIPT = fileURLToPath(new URL('./hook.cjs', import.meta.url));

/** The most pack-objects' stdin may be: the wants and haves of a request body already capped at 64 MiB. */
const MAX_STDIN_BYTES = 64 * 1024 * 1024;

/** Which hook upload-pack runs: the Perl one (when perl is there; the default) or hook.cjs. */
export type HookProgram = 'perl' | 'node';

export class PackHookServer implements PackObjectsHook {
  /** Served view of each running upload-pack, by ticket. */
  readonly #tickets = new Map<string, string>();
  readonly #connections = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** The hook's command: its program and first words, then the socket and a ticket. */
    private readonly hookWords: string[],
    private readonly socketPath: string,
    private readonly cache: PackCache,
    private readonly metrics: PackCacheMetrics,
  ) {
    server.on('connection', (socket) => this.#accept(socket));
  }

  /**
   * Listens on `socketPath` (its directory must be private to the service user).
   * The hook is the Perl one when perl can run it (it starts in a few ms), else hook.cjs.
   */
  static async listen(socketPath: string, cache: PackCache, metrics: PackCacheMetrics, program: HookProgram = 'perl'): Promise<PackHookServer> {
    const server = createServer();
    const hookWords = (program === 'perl' ? perlHookCommand() : undefined) ?? [process.execPath, HOOK_SCRIPT];
    const hooks = new PackHookServer(server, hookWords, socketPath, cache, metrics);
    server.listen(socketPath);
    await once(server, 'listening');
    return hooks;
  }

  attach(view: string): { args: string[]; release(): void } {
    const ticket = randomBytes(16).toString('hex');
    this.#tickets.set(ticket, view);
    const command = [...this.hookWords, this.socketPath, ticket].map(shellWord).join(' ');
    return { args: ['-c', `uploadpack.packObjectsHook=${command}`], release: () => this.#tickets.delete(ticket) };
  }

  /** Stops listening and drops the connections (their hooks fail, so do their fetches). */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.#connections) socket.destroy();
    await closed;
  }

  #accept(socket: Socket): void {
    this.#connections.add(socket);
    socket.on('close', () => this.#connections.delete(socket));
    // A hook killed with its upload-pack (the client went away) resets the connection: nothing to do.
    socket.on('error', () => socket.destroy());
    const parts: Buffer[] = [];
    let receivedBytes = 0;
    let header: RequestHeader | undefined;
    const onData = (chunk: Buffer) => {
      parts.push(chunk);
      receivedBytes += chunk.length;
      if (header === undefined) {
        // The header line is short: the few chunks before its end are joined, never the stdin after it.
        const start = Buffer.concat(parts.splice(0));
        parts.push(start);
        const parsed = parseHeader(start);
        if (parsed === undefined) return;
        if (parsed instanceof Error) return this.#stopReading(socket, onData, parsed);
        header = parsed;
      }
      if (receivedBytes < header.stdinEnd) return;
      const stdin = Buffer.concat(parts).subarray(header.stdinStart, header.stdinEnd);
      this.#stopReading(socket, onData, { ticket: header.ticket, args: header.args, stdin });
    };
    socket.on('data', onData);
  }

  /** Answers the request (or refuses it) once it is all there. */
  #stopReading(socket: Socket, onData: (chunk: Buffer) => void, request: HookRequest | PackHookRequestError): void {
    socket.off('data', onData);
    if (request instanceof Error) void this.#refuse(socket, request);
    else void this.#answer(socket, request);
  }

  /** Answers one hook: the cache entry's file and its size as it grows, then exit code 0; or the reason it failed, then 1. */
  async #answer(socket: Socket, request: HookRequest): Promise<void> {
    try {
      const view = typeof request.ticket === 'string' ? this.#tickets.get(request.ticket) : undefined;
      if (view === undefined) throw new PackHookRequestError('the hook named no running upload-pack (unknown ticket)');
      const args = parsePackObjectsArgs(request.args);
      const opened = this.cache.open({ view, command: { argv: [...args.globals, 'pack-objects', ...args.options] }, stdin: request.stdin });
      // The hook opens the link when it reads FILE, and is done with it when it hangs up.
      const removeLink = () => unlink(opened.readerPath, () => undefined);
      if (socket.destroyed) removeLink();
      else socket.once('close', removeLink);
      await send(socket, FRAME_FILE, Buffer.from(opened.readerPath));
      const size = await followEntry(opened.entry, (written) => send(socket, FRAME_SIZE, Buffer.from(String(written))));
      if (!opened.generated) this.metrics.servedBytes.inc(size);
      await send(socket, FRAME_EXIT, Buffer.from([0]));
    } catch (error) {
      await this.#refuse(socket, error);
    }
  }

  async #refuse(socket: Socket, error: unknown): Promise<void> {
    if (socket.destroyed) return;
    const message = `forgesync pack cache: ${error instanceof Error ? error.message : String(error)}\n`;
    try {
      await send(socket, FRAME_STDERR, Buffer.from(message));
      await send(socket, FRAME_EXIT, Buffer.from([1]));
    } catch {
      socket.destroy();
    }
  }
}

/** A hook's whole request: its header line and pack-objects' stdin. */
interface HookRequest {
  ticket: unknown;
  args: unknown;
  stdin: Buffer;
}

/** A hook's header line, and where the stdin that follows it lies in the bytes received. */
interface RequestHeader {
  ticket: unknown;
  args: unknown;
  stdinStart: number;
  stdinEnd: number;
}

/** The header line at the start of `received`; undefined while it is not all there; an error when it cannot be one. */
function parseHeader(received: Buffer): RequestHeader | PackHookRequestError | undefined {
  const newline = received.indexOf(0x0a);
  if (newline === -1) return received.length > MAX_HEADER_BYTES ? new PackHookRequestError('the hook sent no request line') : undefined;
  let header: { ticket?: unknown; args?: unknown; stdin?: unknown };
  try {
    header = JSON.parse(received.subarray(0, newline).toString('utf8')) as typeof header;
  } catch {
    return new PackHookRequestError('the hook sent a request line that is not JSON');
  }
  const length = header.stdin;
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0 || length > MAX_STDIN_BYTES) {
    return new PackHookRequestError(`the hook's stdin must be a byte count up to ${MAX_STDIN_BYTES}`);
  }
  return { ticket: header.ticket, args: header.args, stdinStart: newline + 1, stdinEnd: newline + 1 + length };
}

/** Writes one frame, waiting while the socket's buffer is full; throws once the socket is gone. */
async function send(socket: Socket, type: number, payload: Buffer): Promise<void> {
  if (socket.destroyed || !socket.writable) throw new Error('the hook went away');
  if (socket.write(frame(type, payload))) return;
  await new Promise<void>((resolve, reject) => {
    const drained = () => {
      stopWaiting();
      resolve();
    };
    const gone = () => {
      stopWaiting();
      reject(new Error('the hook went away'));
    };
    const stopWaiting = () => {
      socket.off('drain', drained);
      socket.off('close', gone);
    };
    socket.on('drain', drained);
    socket.on('close', gone);
  });
}

/** One word for sh (git runs the hook through a shell): single-quoted. */
function shellWord(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
