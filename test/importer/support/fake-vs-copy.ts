import type { AddressInfo } from 'node:net';
import type { FakeProject } from '../../fake-github/index.js';
import { buildServer, type ForgesyncServer } from '../../../src/server/app.js';
import { testSecret } from '../../support/secrets.js';
import { credentialNames, startImportHarness, type ImportHarness } from '../harness.js';

/*
 * A fake GitHub and the copy forgesync imported of it, both listening on
 * 127.0.0.1, so one request can be made of each and the answers compared
 * field by field: the fake stands for GitHub, and the copy must answer as
 * it does. The fake's API links are rewritten to the copy's base before
 * comparing (the copy points every API link at itself); everything else
 * must match as it is.
 */

/** One HTTP answer: status, headers (lower-case names) and body (parsed JSON when it is JSON, else text). */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  text: string;
}

export interface FakeAndCopy {
  harness: ImportHarness;
  server: ForgesyncServer;
  /** The import's name on the copy. */
  importName: string;
  /** `owner/repo` of the imported project. */
  project: string;
  /** The copy's API base: `http://127.0.0.1:<port>/github`. */
  copyBase: string;
  /** The read token the copy accepts (the fake takes `harness.token`). */
  readToken: string;
  /** GET `<fake API base><path>` (path like `/repos/o/r/issues?state=all`) with the fake's token. */
  fake(path: string, headers?: Record<string, string>): Promise<Answer>;
  /** GET `<copy base><path>` with the read token. */
  copy(path: string, headers?: Record<string, string>): Promise<Answer>;
  /** Both answers; the fake's body and Link header with its API base replaced by the copy's, ready to compare. */
  both(path: string, headers?: Record<string, string>): Promise<{ fake: Answer; copy: Answer }>;
  /** Runs the import again (a sync) after the test changed the fake's project. */
  resync(): Promise<void>;
  close(): Promise<void>;
}

async function get(url: string, headers: Record<string, string>): Promise<Answer> {
  const response = await fetch(url, { headers: { 'user-agent': 'forgesync-tests', ...headers } });
  const text = await response.text();
  let body: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text !== '') body = JSON.parse(text) as unknown;
  return { status: response.status, headers: Object.fromEntries(response.headers), body, text };
}

/**
 * Starts a fake GitHub serving `project`, imports it into a fresh forgesync
 * (SQLite unless `database` says otherwise; its git repository mirrored too)
 * and serves the copy on a port of its own.
 */
export async function importFakeToCopy(options: { project: FakeProject; database?: 'sqlite' | 'postgres'; env?: Record<string, string> }): Promise<FakeAndCopy> {
  const harness = await startImportHarness({ fake: { project: options.project }, ...(options.database ? { database: options.database } : {}), ...(options.env ? { env: options.env } : {}) });
  const readToken = testSecret('FAKE_VS_COPY_READ');
  const server = await buildServer(harness.app, { tokens: { admin: testSecret('FAKE_VS_COPY_ADMIN'), read: readToken } });
  try {
    const record = await harness.app.importer.create({ project: harness.project, apiUrl: harness.fake.apiUrl, credentials: credentialNames(1) });
    const { outcome } = await harness.app.importer.runHere(record.name);
    if (outcome !== 'synced') throw new Error(`the import of the fake ended ${outcome}: ${JSON.stringify(await harness.app.importer.status(record.name))}`);
    await server.listen({ port: 0, host: '127.0.0.1' });
    const copyBase = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}/github`;
    const fakeBase = harness.fake.apiUrl;
    const toCopy = (text: string) => text.split(fakeBase).join(copyBase);
    const fake = (path: string, headers: Record<string, string> = {}) => get(fakeBase + path, { authorization: `token ${harness.token}`, ...headers });
    const copy = (path: string, headers: Record<string, string> = {}) => get(copyBase + path, { authorization: `token ${readToken}`, ...headers });
    return {
      harness,
      server,
      importName: record.name,
      project: harness.project,
      copyBase,
      readToken,
      fake,
      copy,
      async both(path, headers = {}) {
        const [fromFake, fromCopy] = await Promise.all([fake(path, headers), copy(path, headers)]);
        const rewritten = toCopy(fromFake.text);
        const body = typeof fromFake.body === 'string' ? rewritten : (JSON.parse(rewritten) as unknown);
        const headersToCopy = { ...fromFake.headers, ...(fromFake.headers.link ? { link: toCopy(fromFake.headers.link) } : {}) };
        return { fake: { ...fromFake, body, text: rewritten, headers: headersToCopy }, copy: fromCopy };
      },
      async resync() {
        await harness.app.importer.requestSync(record.name);
        const { outcome } = await harness.app.importer.runHere(record.name);
        if (outcome !== 'synced') throw new Error(`the sync of the fake ended ${outcome}`);
      },
      async close() {
        await server.close();
        await harness.close();
      },
    };
  } catch (error) {
    await server.close();
    await harness.close();
    throw error;
  }
}
