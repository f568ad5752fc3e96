import { ForgesyncError } from '../../errors.js';

/*
 * What the pack-objects hook (hook.cjs) and the serving process say to each
 * other over the cache's Unix socket. Keep both hooks (hook.cjs, perl-hook.ts)
 * in step with this file.
 *
 * Hook → server: one line of JSON, `{"ticket": "<hex>", "args": ["git", …,
 * "pack-objects", …], "stdin": <bytes>}` (the ticket names the upload-pack
 * the server started, hence the repository; args are what upload-pack gave
 * the hook), then that many bytes: pack-objects' stdin (wants, `--not`,
 * haves, `--shallow` lines). The hook keeps the connection open until it is
 * done: its end tells the server the hook no longer needs the FILE.
 *
 * Server → hook: frames of `type (1 byte) | length (4 bytes, big-endian) |
 * payload`. FILE names a file the hook opens at once (a link the server made
 * to the entry's bytes, for this hook only, removed when the connection
 * ends: the pack bytes never pass through the serving process); SIZE
 * (decimal digits) says how many bytes of it are written so far, and the
 * hook copies them to its stdout (upload-pack's pack stream); STDERR is a
 * message for its stderr (relayed to the client); EXIT, last, is one byte:
 * the hook's exit code, once it copied every announced byte. Anything but 0
 * makes upload-pack fail the fetch, and so does a connection that ends
 * without EXIT: the hook never passes a truncated pack off as whole.
 */

export const FRAME_STDERR = 2;
export const FRAME_EXIT = 3;
export const FRAME_FILE = 4;
export const FRAME_SIZE = 5;
/** Bytes before a frame's payload. */
export const FRAME_HEADER_BYTES = 5;

/** The longest header line a hook may send (its args are a dozen short options). */
export const MAX_HEADER_BYTES = 64 * 1024;

/** A frame for the hook. */
export function frame(type: number, payload: Buffer): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** A hook's request that the cache cannot take (unknown ticket, unexpected arguments, stdin too large). */
export class PackHookRequestError extends ForgesyncError {}

/**
 * pack-objects' arguments as upload-pack gives them to its hook: git's global
 * options (only `--shallow-file ''`, for shallow fetches), then `pack-objects`
 * and its options.
 */
export interface PackObjectsArgs {
  globals: string[];
  options: string[];
}

/** pack-objects options upload-pack passes (git 2.x); anything else is refused rather than run blind. */
const KNOWN_OPTIONS = /^--(?:revs|thin|stdout|shallow|progress|delta-base-offset|include-tag|filter=[\x21-\x7e]+|uri-protocol=[a-z0-9+.-]+)$/;

/**
 * The arguments of a hook request, checked: `git [--shallow-file ''] pack-objects <known options>`.
 * `--progress` is dropped: progress is not relayed through the cache, and without it a
 * clone from a terminal and one from a CI log share their entries.
 * @throws PackHookRequestError on anything else.
 */
export function parsePackObjectsArgs(args: unknown): PackObjectsArgs {
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) throw new PackHookRequestError('the hook sent no argument list');
  const list = args as string[];
  if (list[0] !== 'git') throw new PackHookRequestError('the hook was not invoked as `<hook> git pack-objects …`');
  let at = 1;
  const globals: string[] = [];
  if (list[at] === '--shallow-file' && list[at + 1] === '') {
    globals.push('--shallow-file', '');
    at += 2;
  }
  if (list[at] !== 'pack-objects') throw new PackHookRequestError(`unexpected git arguments before pack-objects: ${JSON.stringify(list.slice(1, at + 1))}`);
  const options = list.slice(at + 1).filter((option) => option !== '--progress');
  const unknown = options.find((option) => !KNOWN_OPTIONS.test(option));
  if (unknown !== undefined) throw new PackHookRequestError(`unexpected pack-objects option ${JSON.stringify(unknown.slice(0, 80))}`);
  return { globals, options };
}
