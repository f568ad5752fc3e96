'use strict';
/*
 * forgesync's `uploadpack.packObjectsHook` in node, used where perl is
 * missing (perl-hook.ts is the same client; keep the two in step with
 * protocol.ts). upload-pack runs `<node> hook.cjs <socket> <ticket> git
 * [--shallow-file ''] pack-objects …` with pack-objects' stdin, and reads the
 * pack from our stdout. We hand the arguments and stdin to the serving
 * process's pack cache over its Unix socket; it answers with frames (type
 * byte, 4-byte big-endian length, payload): FILE=4 names the cached pack's
 * file (opened at once), SIZE=5 how many of its bytes are written (we copy
 * them to stdout), STDERR=2 a message, EXIT=3 the exit code, last. Anything
 * but a clean EXIT 0 exits non-zero, so upload-pack fails the fetch instead
 * of sending a truncated pack. When the socket cannot be reached at all
 * (nothing sent yet), we run pack-objects ourselves, as upload-pack would
 * have without a hook.
 *
 * Plain CommonJS with node's built-ins only.
 */
const net = require('node:net');
const fs = require('node:fs');
const { spawn } = require('node:child_process');

const FRAME_STDERR = 2;
const FRAME_EXIT = 3;
const FRAME_FILE = 4;
const FRAME_SIZE = 5;
const HEADER_BYTES = 5;
const COPY_BYTES = 256 * 1024;

const [socketPath, ticket, ...args] = process.argv.slice(2);
let connected = false;

function fail(message) {
  try {
    fs.writeSync(2, `forgesync pack cache: ${message}\n`);
  } finally {
    process.exit(1);
  }
}

/** Without the cache: pack-objects itself, on our stdin and stdout. */
function runPackObjectsItself() {
  const child = spawn(args[0], args.slice(1), { stdio: 'inherit' });
  child.on('error', (error) => fail(`could not run ${args[0]}: ${error.message}`));
  child.on('exit', (code, signal) => process.exit(signal ? 1 : code));
}

const socket = net.createConnection(socketPath);
socket.on('connect', () => {
  connected = true;
  // The whole stdin first (wants and haves: small), then the request; the connection stays open until we are done.
  const input = [];
  process.stdin.on('data', (chunk) => input.push(chunk));
  process.stdin.on('end', () => {
    const stdin = Buffer.concat(input);
    socket.write(`${JSON.stringify({ ticket, args, stdin: stdin.length })}\n`);
    socket.write(stdin);
  });
});
socket.on('error', (error) => {
  if (!connected) runPackObjectsItself();
  else fail(`lost the connection to forgesync: ${error.message}`);
});

let pending = Buffer.alloc(0);
let pack;
let copied = 0;
const copyBuffer = Buffer.allocUnsafe(COPY_BYTES);

/** Copies the cached pack's bytes up to `size` to stdout (blocking writes: upload-pack's pace). */
function copyTo(size) {
  if (pack === undefined) return fail('no pack file was named');
  while (copied < size) {
    const read = fs.readSync(pack, copyBuffer, 0, Math.min(COPY_BYTES, size - copied), copied);
    if (read === 0) return fail('the cached pack is shorter than announced');
    writeAll(copyBuffer.subarray(0, read));
    copied += read;
  }
}

function writeAll(bytes) {
  let at = 0;
  while (at < bytes.length) {
    try {
      at += fs.writeSync(1, bytes, at);
    } catch (error) {
      // A non-blocking stdout that is full: wait a little (rare: pipes are blocking here).
      // Anything else (EPIPE: upload-pack went away, the client did): nothing left to do.
      if (error.code !== 'EAGAIN') process.exit(1);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

socket.on('data', (chunk) => {
  pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
  while (pending.length >= HEADER_BYTES) {
    const length = pending.readUInt32BE(1);
    if (pending.length < HEADER_BYTES + length) break;
    const type = pending[0];
    const payload = pending.subarray(HEADER_BYTES, HEADER_BYTES + length);
    pending = pending.subarray(HEADER_BYTES + length);
    if (type === FRAME_FILE) {
      try {
        pack = fs.openSync(payload.toString('utf8'), 'r');
      } catch (error) {
        fail(`cannot open the cached pack: ${error.message}`);
      }
    } else if (type === FRAME_SIZE) {
      copyTo(Number(payload.toString('ascii')));
    } else if (type === FRAME_STDERR) {
      fs.writeSync(2, payload);
    } else if (type === FRAME_EXIT) {
      // Every announced byte is copied (frames come in order): done; our exit ends the connection.
      process.exit(payload[0]);
    } else {
      fail(`unexpected frame type ${type}`);
    }
  }
});
socket.on('close', () => {
  if (connected) fail('the connection ended before the pack was complete');
});
