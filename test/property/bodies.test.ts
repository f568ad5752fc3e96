import fc from 'fast-check';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BodyMeter } from '../../src/egress/body.js';
import { EgressNetworkError, EgressResponseTooLargeError } from '../../src/egress/errors.js';
import { pinnedRequest } from '../../src/egress/http.js';
import { fileNameOf, safeContentType } from '../../src/importer/attachments/names.js';
import { GithubRequestError } from '../../src/importer/errors.js';
import { GithubClient } from '../../src/importer/github/client.js';
import { TokenBudgets } from '../../src/importer/github/pacer.js';
import { PageBudget, type PageHold } from '../../src/importer/run/page-budget.js';
import { loopbackEgress } from '../support/egress.js';
import { check, checkAsync, controlChar, hostileString } from './arbitraries.js';

/*
 * What an upstream's answer may cost: bodies of any size and chunking
 * against the caps (typed errors past them, never a buffer sized from a
 * claimed length), streamed bodies alike, the memory budget of list walks
 * under any schedule (bounded, never stuck), and the names and content
 * types taken from downloads.
 */

const BODY_RUNS = 150;
const BUDGET_RUNS = 300;
const NAME_RUNS = 5000;
const ERROR_ANSWER_RUNS = 60;

/** How the test server answers the next request. */
interface Plan {
  chunks: number[];
  /** honest: the true content-length; none: chunked; huge: a content-length of 1 TiB, then the chunks, then a hang-up. */
  declare: 'honest' | 'none' | 'huge';
  status: number;
  contentType?: string;
  text?: string;
}

let server: Server;
let origin: string;
let plan: Plan = { chunks: [], declare: 'honest', status: 200 };

const byteAt = (index: number) => (index * 7 + 3) % 251;
const bodyOf = (chunks: number[]): Buffer => {
  const total = chunks.reduce((sum, size) => sum + size, 0);
  return Buffer.from(Array.from({ length: total }, (_, index) => byteAt(index)));
};

async function answer(_req: IncomingMessage, res: ServerResponse): Promise<void> {
  const current = plan;
  if (current.text !== undefined) {
    res.writeHead(current.status, { ...(current.contentType !== undefined ? { 'content-type': current.contentType } : {}), 'content-length': String(Buffer.byteLength(current.text)) });
    return void res.end(current.text);
  }
  const body = bodyOf(current.chunks);
  const length = current.declare === 'honest' ? String(body.length) : current.declare === 'huge' ? String(2 ** 40) : undefined;
  res.writeHead(current.status, { 'content-type': 'application/octet-stream', ...(length ? { 'content-length': length } : {}) });
  res.flushHeaders();
  let at = 0;
  for (const size of current.chunks) {
    if (res.destroyed) return;
    res.write(body.subarray(at, at + size));
    at += size;
    await tick();
  }
  if (current.declare === 'huge') res.socket?.destroy();
  else res.end();
}

beforeAll(async () => {
  server = createServer((req, res) => void answer(req, res).catch(() => res.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A meter that keeps the net count (what the reader still keeps). */
function countingMeter(): BodyMeter & { net: number } {
  const meter = {
    net: 0,
    add(bytes: number) {
      meter.net += bytes;
      return undefined;
    },
    drop(bytes: number) {
      meter.net -= bytes;
    },
  };
  return meter;
}

const plans = fc.record({
  chunks: fc.array(fc.integer({ min: 0, max: 40_000 }), { maxLength: 10 }),
  declare: fc.constantFrom<Plan['declare']>('honest', 'none', 'huge'),
  cap: fc.integer({ min: 1, max: 160_000 }),
  streamed: fc.boolean(),
});

describe('bodies of any size and chunking against the cap', () => {
  it('are read whole up to the cap, refused past it with the limit named, and never sized from a claim', async () => {
    const policy = loopbackEgress();
    await checkAsync(
      fc.asyncProperty(plans, async ({ chunks, declare, cap, streamed }) => {
        plan = { chunks, declare, status: 200 };
        const total = chunks.reduce((sum, size) => sum + size, 0);
        const meter = countingMeter();
        const received: Buffer[] = [];
        const sink = new Writable({
          write(chunk: Buffer, _encoding, callback) {
            received.push(chunk);
            callback();
          },
        });
        const outcome = await pinnedRequest(new URL(`${origin}/body`), { policy, maxBytes: cap, ...(streamed ? { sink: () => sink } : { meter }) }).then(
          (response) => ({ response }),
          (error: unknown) => ({ error }),
        );
        await tick();
        const streamedBytes = received.reduce((sum, chunk) => sum + chunk.length, 0);
        if (declare === 'huge' || total > cap) {
          // A claim of 1 TiB is past every cap here: refused before a byte is read.
          expect('error' in outcome && outcome.error).toBeInstanceOf(EgressResponseTooLargeError);
          expect(((outcome as { error: EgressResponseTooLargeError }).error).maxBytes).toBe(cap);
          expect((outcome as { error: Error }).error.message).toContain(`larger than ${cap} bytes`);
          expect(streamedBytes).toBeLessThanOrEqual(cap);
        } else {
          expect('response' in outcome).toBe(true);
          const { response } = outcome as { response: Awaited<ReturnType<typeof pinnedRequest>> };
          expect(response.size).toBe(total);
          const bytes = streamed ? Buffer.concat(received) : response.body;
          expect(bytes.equals(bodyOf(chunks))).toBe(true);
          if (streamed) expect(response.body.length).toBe(0);
        }
        // What a meter still counts is exactly what the caller holds: the body, or nothing.
        expect(meter.net).toBe(!streamed && 'response' in outcome ? total : 0);
      }),
      BODY_RUNS,
    );
  }, 120_000);

  it('does not allocate for a claimed length under the cap that never comes', async () => {
    plan = { chunks: [10], declare: 'huge', status: 200 };
    const before = process.memoryUsage().arrayBuffers;
    const error = await pinnedRequest(new URL(`${origin}/claim`), { policy: loopbackEgress(), maxBytes: 2 ** 50 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(EgressNetworkError);
    expect(error).not.toBeInstanceOf(EgressResponseTooLargeError);
    // A buffer of the claimed 1 TiB could not be made at all; one of a few MiB would show here.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(4 * 2 ** 20);
  });
});

describe('the page budget of list walks, under any schedule', () => {
  const SHARED = 256 * 1024;
  const MAX_PAGE = 256 * 1024;
  const MAX_CHUNK = 16 * 1024;
  const pages = fc.array(
    fc.record({
      size: fc.oneof(fc.integer({ min: MAX_PAGE / 2, max: MAX_PAGE }), fc.integer({ min: 0, max: MAX_PAGE })),
      chunk: fc.integer({ min: 1024, max: MAX_CHUNK }),
      // Mostly what a tiny page 1 makes a walk expect: next to nothing.
      expected: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 4096 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: MAX_PAGE }) }),
      // Now and then a request breaks off partway (its bytes dropped, its hold released).
      failsAt: fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) }),
    }),
    { minLength: 1, maxLength: 24 },
  );

  it('holds at most the shared bytes plus one page (and a chunk per page), and always lets every page finish', async () => {
    // (Each page read goes up to MAX_PAGE: the cap of one answer.)
    await checkAsync(
      // `lazy`: storing waits its turn that many times longer than reading (slow commits let pages pile up).
      fc.asyncProperty(pages, fc.array(fc.nat(), { minLength: 1, maxLength: 64 }), fc.integer({ min: 1, max: 12 }), async (specs, choices, lazy) => {
        const budget = new PageBudget(SHARED);
        type Sim = { spec: (typeof specs)[number]; hold?: PageHold; delivered: number; paused: boolean; state: 'waiting' | 'reading' | 'read' | 'gone' };
        const sims: Sim[] = specs.map((spec) => ({ spec, delivered: 0, paused: false, state: 'waiting' }));
        for (const sim of sims) {
          void budget.open({ expected: sim.spec.expected }).then((hold) => {
            sim.hold = hold;
            sim.state = 'reading';
          });
        }
        // Past the shared bytes: one page read to its end, and the chunk each other page read before it stopped.
        const bound = SHARED + MAX_PAGE + specs.reduce((sum, spec) => sum + spec.chunk, 0);
        for (let step = 0; ; step++) {
          await tick();
          const actions: (() => void)[] = [];
          const stores: (() => void)[] = [];
          for (const sim of sims) {
            const hold = sim.hold;
            if (!hold) continue;
            if (sim.state === 'reading' && !sim.paused) {
              const failing = sim.spec.failsAt !== null && sim.delivered >= sim.spec.failsAt * sim.spec.size && sim.delivered > 0;
              if (failing) {
                actions.push(() => {
                  hold.drop(sim.delivered);
                  hold.release();
                  sim.state = 'gone';
                });
              } else if (sim.delivered < sim.spec.size) {
                actions.push(() => {
                  const bytes = Math.min(sim.spec.chunk, sim.spec.size - sim.delivered);
                  sim.delivered += bytes;
                  const wait = hold.add(bytes);
                  if (wait) {
                    sim.paused = true;
                    void wait.then(() => (sim.paused = false));
                  }
                });
              } else {
                actions.push(() => {
                  hold.read();
                  sim.state = 'read';
                });
              }
            }
            if (sim.state === 'read') {
              stores.push(() => {
                hold.release();
                sim.state = 'gone';
              });
            }
          }
          const choice = choices[step % choices.length]! + step;
          const from = actions.length === 0 || (stores.length > 0 && choice % lazy === 0) ? stores : actions;
          if (from.length === 0) break;
          if (step > 100_000) throw new Error(`still running after ${step} steps: ${JSON.stringify(sims.map((sim) => [sim.state, sim.paused, sim.delivered, sim.spec.size]))}`);
          from[choice % from.length]!();
          expect(budget.used).toBeLessThanOrEqual(bound);
        }
        // Nothing runnable: every page must be done, none waiting to be asked for, none paused for good.
        expect(sims.map((sim) => sim.state)).toEqual(sims.map(() => 'gone'));
        expect(budget.used).toBe(0);
        expect(budget.peak).toBeLessThanOrEqual(bound);
      }),
      BUDGET_RUNS,
    );
  }, 120_000);
});

describe('names and content types taken from downloads', () => {
  const escapes = fc.constantFrom('%', '%2', '%zz', '%E0%A4%A', '%C3%A9', '%F0%9F%98%80', '%2F', '%5C', '%00', '%0A', '%7F', '%C2%85', '%ED%A0%80', '%25', '..', '.', ' ');
  const segments = fc.array(fc.oneof(escapes, hostileString({ maxLength: 6, long: 400 }), controlChar), { maxLength: 12 }).map((parts) => parts.join(''));

  it('a file name comes from any URL, never throws, and holds no control character or path separator', () => {
    check(
      fc.property(segments, (segment) => {
        let url: URL;
        try {
          url = new URL(`https://files.example.test/o/r/files/1/${segment}`);
        } catch {
          return;
        }
        const name = fileNameOf(url);
        expect(name.length).toBeGreaterThan(0);
        expect(Array.from(name).length).toBeLessThanOrEqual(255);
        expect(name).not.toMatch(/[\u0000-\u001f\u007f-\u009f/\\]/);
        expect(name.trim()).not.toBe('');
        expect(Buffer.from(name, 'utf8').toString('utf8')).toBe(name);
      }),
      NAME_RUNS,
    );
  });

  it('a plain name is kept as it is, a percent-escaped one decoded', () => {
    expect(fileNameOf(new URL('https://h.test/a/files/1/logs.zip'))).toBe('logs.zip');
    expect(fileNameOf(new URL('https://h.test/a/files/1/caf%C3%A9%20menu.pdf'))).toBe('café menu.pdf');
    expect(fileNameOf(new URL('https://h.test/a/files/1/report%E0%A4%A.txt'))).toBe('report%E0%A4%A.txt');
    expect(fileNameOf(new URL('https://h.test/a/files/1/..%2F..%2Fetc%2Fpasswd'))).toBe('.._.._etc_passwd');
    expect(fileNameOf(new URL('https://h.test/a/files/1/'))).toBe('file');
    expect(fileNameOf(new URL('https://h.test/a/files/1/%00'))).toBe('_');
  });

  it('a content type is kept only when it is a well-formed media type of at most 255 characters', () => {
    const types = fc.oneof(
      fc.constantFrom('image/png', 'text/plain; charset=utf-8', 'application/json', 'text/html\r\nx: 1', '', ';', 'a/b; c', 'a/b;c="d\\"'),
      hostileString({ maxLength: 8, long: 600 }),
    );
    check(
      fc.property(types, (type) => {
        const safe = safeContentType(type);
        expect(safe.length).toBeLessThanOrEqual(255);
        expect(safe).not.toMatch(/[\r\n\u0000]/);
        expect(safe === 'application/octet-stream' || safe === type.trim()).toBe(true);
      }),
      NAME_RUNS,
    );
  });
});

describe('error answers of any content type', () => {
  it('end as a typed error or an answer to act on, never as a parser\'s exception', async () => {
    const client = new GithubClient({ apiUrl: `${origin}/api/v3`, tokens: [], budgets: new TokenBudgets(), concurrency: 2, policy: loopbackEgress(), retries: 0, retryBaseMs: 1 });
    const headerText = fc.string({ unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }), fc.constant(0x09)).map((code) => String.fromCharCode(code)), maxLength: 80 });
    await checkAsync(
      fc.asyncProperty(
        fc.constantFrom(400, 404, 409, 410, 422, 451, 500, 502, 503),
        fc.option(fc.oneof(fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', 'text/html; charset=latin1', 'application/octet-stream; charset=utf-8'), headerText)),
        fc.oneof(fc.constantFrom('{"message":"x"}', '{', '', 'null', '[1,2]', '{"message":{"a":1}}'), hostileString({ maxLength: 10, long: 200 })),
        async (status, contentType, text) => {
          plan = { chunks: [], declare: 'honest', status, text, ...(contentType === null ? {} : { contentType }) };
          const outcome = await client.get('/repos/o/r/issues').then(
            (response) => ({ response }),
            (error: unknown) => ({ error }),
          );
          if ('response' in outcome) {
            expect(outcome.response.status).toBe(status);
            expect(status).toBeLessThan(500);
          } else {
            expect(outcome.error).toBeInstanceOf(GithubRequestError);
            expect(status).toBeGreaterThanOrEqual(500);
          }
        },
      ),
      ERROR_ANSWER_RUNS,
    );
    client.close();
  }, 120_000);
});
