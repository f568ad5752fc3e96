import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse, print } from 'graphql';
import { minimalAnswer } from './gh-capture-answers.js';
import { startGhFront } from './gh-front.js';
import { argsFor, CAPTURE_SUBJECTS, ghCommands, type GhCommand } from './gh-commands.js';
import { ghRepo, runGh } from './run-gh.js';
import { testSecret } from '../../support/secrets.js';

/*
 * Records what gh 2.23 sends for each command of gh-commands.ts: gh runs
 * through the TLS front against a recording upstream that keeps every
 * request (method, path, GraphQL body) and answers just enough for gh to go
 * on (gh-capture-answers.ts; a release for `release view`, 404 elsewhere on
 * REST). Each distinct GraphQL query is written to
 * test/importer/fixtures/gh-queries/<command>[.<n>].graphql with the command,
 * operation name and variables as a comment header, and index.json lists
 * every request of every command in order — the GraphQL endpoint's tests
 * read these to be sure its schema answers what gh really asks. Re-run by
 * hand when the gh version changes (see the folder's README.md).
 */

const OWNER = 'acme';
const REPO = 'widgets';

interface Recorded {
  method: string;
  path: string;
  query?: string;
  operationName?: string;
  variables?: Record<string, unknown>;
}

/** A REST answer good enough for gh's decoding: a release for `release view`, GitHub's 404 otherwise. */
function restAnswer(path: string, res: ServerResponse): void {
  if (/^\/repos\/[^/]+\/[^/]+\/releases\/tags\//.test(path)) {
    const release = {
      id: 1, tag_name: 'v1.0', name: 'v1.0', body: 'notes', draft: false, prerelease: false, created_at: '2024-01-02T03:04:05Z', published_at: '2024-01-02T03:04:05Z',
      html_url: `https://example.invalid/${OWNER}/${REPO}/releases/tag/v1.0`, url: 'https://example.invalid/r/1', tarball_url: 'https://example.invalid/t', zipball_url: 'https://example.invalid/z',
      author: { login: 'monalisa' }, assets: [],
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(release));
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Not Found', documentation_url: 'https://docs.github.com/rest' }));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * gh asks for a release by tag twice at once (REST for a published one,
 * GraphQL for a draft) and drops whichever is still pending once one
 * answers. The REST answer for a tag therefore waits (at most 10 s) until a
 * GraphQL request has arrived, and is logged after it, so both are captured
 * in the same order on every run.
 */
const WAITS_FOR_GRAPHQL = /^\/repos\/[^/]+\/[^/]+\/releases\/tags\//;

/** The recording upstream: every request kept in `log`; GraphQL at /graphql, REST below /rest. */
async function startRecorder(log: Recorded[]): Promise<{ origin: string; close(): Promise<void> }> {
  let graphqlArrived: () => void = () => undefined;
  const firstGraphql = new Promise<void>((resolve) => (graphqlArrived = resolve));
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const url = req.url ?? '/';
      if (url.startsWith('/graphql')) {
        const request = JSON.parse(body) as { query: string; variables?: Record<string, unknown>; operationName?: string };
        log.push({ method: req.method ?? 'POST', path: '/api/graphql', query: request.query, ...(request.variables ? { variables: request.variables } : {}), ...(request.operationName ? { operationName: request.operationName } : {}) });
        graphqlArrived();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(minimalAnswer(request.query)));
        return;
      }
      const path = url.slice('/rest'.length);
      if (WAITS_FOR_GRAPHQL.test(path)) await Promise.race([firstGraphql, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
      log.push({ method: req.method ?? 'GET', path: `/api/v3${path}` });
      restAnswer(path, res);
    })().catch((error: Error) => res.writeHead(500).end(error.message));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The operation name gh gave (in the body or in the query text). */
function operationOf(entry: Recorded): string {
  return entry.operationName ?? /\b(?:query|mutation)\s+(\w+)/.exec(entry.query ?? '')?.[1] ?? 'anonymous';
}

/** `gh …` as a shell user would type it (arguments with spaces quoted), for the comment headers. */
function commandLine(command: GhCommand): string {
  return ['gh', ...argsFor(command, `${OWNER}/${REPO}`).map((arg) => (/\s/.test(arg) ? JSON.stringify(arg) : arg))].join(' ');
}

/** The file text of one captured query: comment header, then the query as graphql-js prints it. */
function queryFile(command: GhCommand, entry: Recorded, variables: Record<string, unknown>): string {
  return [
    `# gh 2.23.0: ${commandLine(command)}`,
    `# operation: ${operationOf(entry)}`,
    `# variables: ${JSON.stringify(variables)}`,
    print(parse(entry.query ?? '')),
    '',
  ].join('\n');
}

/** Runs every command through a recording upstream and writes the fixtures to `outDir`. Returns what failed to run. */
export async function captureGhQueries(outDir: string): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const failures: string[] = [];
  const index: Record<string, { command: string; exitCode: number | null; requests: Array<{ method: string; path: string; file?: string; operation?: string }> }> = {};
  for (const command of Object.values(ghCommands(CAPTURE_SUBJECTS))) {
    const log: Recorded[] = [];
    const recorder = await startRecorder(log);
    const front = await startGhFront({ restBase: `${recorder.origin}/rest`, graphqlUrl: `${recorder.origin}/graphql` });
    try {
      const target = { host: front.host, token: testSecret('GH_CAPTURE_TOKEN'), caFile: front.caFile };
      const args = argsFor(command, ghRepo(target, `${OWNER}/${REPO}`));
      const run = await runGh(args, target);
      if (run.code !== 0) failures.push(`${command.slug}: exit ${run.code}: ${run.stderr.trim()}`);
      const queries = log.filter((entry) => entry.query !== undefined);
      const distinct = [...new Map(queries.map((entry) => [entry.query, entry])).values()];
      const requests = log.map((entry) => {
        if (entry.query === undefined) return { method: entry.method, path: entry.path };
        const n = distinct.findIndex((candidate) => candidate.query === entry.query);
        const file = distinct.length === 1 ? `${command.slug}.graphql` : `${command.slug}.${n + 1}.graphql`;
        return { method: entry.method, path: entry.path, operation: operationOf(entry), file };
      });
      distinct.forEach((entry, n) => {
        const file = distinct.length === 1 ? `${command.slug}.graphql` : `${command.slug}.${n + 1}.graphql`;
        writeFileSync(join(outDir, file), queryFile(command, entry, entry.variables ?? {}));
      });
      index[command.slug] = { command: commandLine(command), exitCode: run.code, requests };
    } finally {
      await front.close();
      await recorder.close();
    }
  }
  writeFileSync(join(outDir, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
  return failures;
}
