import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../src/egress/policy.js';
import { GithubAnswerTooLargeError, GithubRequestError } from '../../src/importer/errors.js';
import { GithubClient, MAX_ANSWER_BYTES } from '../../src/importer/github/client.js';
import { TokenBudgets } from '../../src/importer/github/pacer.js';
import { PageBudget } from '../../src/importer/run/page-budget.js';

/*
 * What one answer of an API host may cost: at most MAX_ANSWER_BYTES read
 * (refused with a typed error naming the limit, and not asked again), a
 * metered answer counted as it arrives and only while it is kept, and a
 * redirect to an address the egress policy refuses not retried either.
 */

const MiB = 2 ** 20;
let server: Server;
let apiUrl: string;
let handler: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
let requests: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  requests = [];
});

/** Only 127.0.0.1 is allowed: 127.0.0.2 is loopback the operator did not allow. */
const client = () =>
  new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 4, policy: new EgressPolicy({ allowNetworks: ['127.0.0.1/32'] }), retries: 3, retryBaseMs: 1 });

/** A JSON array of about `bytes` bytes, written in 64 KiB pieces, with or without a content-length. */
function largeArray(bytes: number, chunked: boolean) {
  const piece = Buffer.from(`${'{"id":1},'.repeat(7281)}`);
  const pieces = Math.ceil(bytes / piece.length);
  return (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': String(1 + pieces * piece.length + 2) }) });
    res.write('[');
    let sent = 0;
    const more = (): void => {
      while (sent < pieces && !res.destroyed) {
        sent += 1;
        if (!res.write(piece)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end('0]');
    };
    more();
  };
}

describe('the answer cap of the GitHub client', () => {
  it('refuses an answer longer than the cap, named with the limit, without asking again', async () => {
    for (const chunked of [false, true]) {
      requests = [];
      handler = largeArray(9 * MiB, chunked);
      const error = await client().get('/repos/o/r/issues', { query: { page: 2 } }).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(GithubAnswerTooLargeError);
      expect(error).toBeInstanceOf(GithubRequestError);
      expect((error as GithubAnswerTooLargeError).maxBytes).toBe(MAX_ANSWER_BYTES);
      expect((error as Error).message).toMatch(/GET \/repos\/o\/r\/issues failed: the answer is larger than 8388608 bytes \(8 MiB\)/);
      expect(requests).toHaveLength(1);
    }
  });

  it('reads an answer under the cap whole, counting it against a meter only while it is kept', async () => {
    handler = largeArray(7 * MiB, true);
    const budget = new PageBudget();
    const hold = await budget.open();
    const response = await client().get<unknown[]>('/repos/o/r/issues', { meter: hold });
    expect(response.status).toBe(200);
    expect(response.bytes).toBeGreaterThan(7 * MiB);
    expect(budget.used).toBe(response.bytes);
    expect(response.data.length).toBeGreaterThan(800_000);
    hold.release();
    expect(budget.used).toBe(0);
  });

  it('does not keep counting the bodies of failed answers before a success', async () => {
    let calls = 0;
    handler = (_req, res) => {
      calls += 1;
      if (calls === 1) {
        res.writeHead(502, { 'content-type': 'text/html' });
        return void res.end('<html>' + 'x'.repeat(100_000) + '</html>');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[{"id":1}]');
    };
    const budget = new PageBudget();
    const hold = await budget.open();
    const response = await client().get('/repos/o/r/issues', { meter: hold });
    expect(response.status).toBe(200);
    expect(budget.used).toBe('[{"id":1}]'.length);
    hold.release();
  });

  it('does not retry a redirect to an address the egress policy refuses', async () => {
    handler = (_req, res) => {
      res.writeHead(302, { location: 'http://127.0.0.2:9/api/v3/repos/o/r/issues' });
      res.end();
    };
    const error = await client().get('/repos/o/r/issues').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(GithubRequestError);
    expect((error as Error).message).toMatch(/refusing to connect to 127\.0\.0\.2/);
    expect(requests).toHaveLength(1);
  });
});
