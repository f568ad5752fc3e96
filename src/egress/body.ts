import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Told of a body's bytes as they arrive, before they are kept, so that
 * requests can share one budget of memory: `add` may answer a promise, and
 * the body is not read further until it settles (the connection's flow
 * control then holds the sender back, in the kernel's buffers, not ours).
 */
export interface BodyMeter {
  /** `bytes` more of the body were read and are kept; a promise holds further reading back until it settles. */
  add(bytes: number): Promise<void> | undefined;
  /** `bytes` counted before are no longer kept (the request failed, or a redirect's body was dropped). */
  drop(bytes: number): void;
}

/**
 * Where an answer's body is streamed to, chosen per answer (per redirect hop)
 * from its status and headers; undefined reads it into memory instead.
 */
export type BodySink = (head: { status: number; headers: IncomingHttpHeaders }) => Writable | undefined;

/** The body went past the reader's limit; the reader stopped there. */
export class BodyTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`the response is larger than ${maxBytes} bytes`);
  }
}

const ENDED_EARLY = 'the connection closed before the response ended';

/**
 * Reads a body (a response's, or a request's) into one buffer of at most `maxBytes`: the bytes are counted
 * as they arrive (a `content-length` claim is not used to size anything),
 * and reading stops at the first byte past the limit.
 * @throws BodyTooLarge; an Error naming what broke the connection; the meter's rejection.
 */
export function bufferBody(res: Readable, maxBytes: number, meter?: BodyMeter): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (error: unknown): void => {
      if (done) return;
      done = true;
      res.destroy();
      if (size > 0) meter?.drop(size);
      reject(error);
    };
    res.on('data', (chunk: Buffer) => {
      if (done) return;
      if (size + chunk.length > maxBytes) return fail(new BodyTooLarge(maxBytes));
      size += chunk.length;
      chunks.push(chunk);
      const wait = meter?.add(chunk.length);
      if (!wait) return;
      res.pause();
      wait.then(
        () => {
          if (!done) res.resume();
        },
        fail,
      );
    });
    res.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    res.on('error', (error) => fail(error));
    res.on('close', () => fail(new Error(ENDED_EARLY)));
  });
}

/**
 * Streams a body into `sink`, at most `maxBytes` of it (more fails before
 * the byte past the limit is written), and resolves with its size once the
 * sink has finished. The sink's own failure (a full disk) rejects with the
 * sink's error, as it is; `sink` is destroyed on any failure.
 * @throws BodyTooLarge; the sink's error; an Error naming what broke the connection.
 */
export async function streamBody(res: IncomingMessage, sink: Writable, maxBytes: number): Promise<number> {
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      callback(size > maxBytes ? new BodyTooLarge(maxBytes) : null, size > maxBytes ? undefined : chunk);
    },
  });
  try {
    await pipeline(res, counter, sink);
  } catch (error) {
    if (error instanceof BodyTooLarge || (sink.errored && sink.errored === error)) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') throw new Error(ENDED_EARLY, { cause: error });
    throw error;
  }
  return size;
}
