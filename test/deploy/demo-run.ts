import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { WebhookReceiver } from '../feeds/sinks/http-receiver.js';
import { credentialNames, startImportHarness, type ImportHarness } from '../importer/harness.js';
import { genericDelivery, WEBHOOK_ENV } from '../replication/webhooks/fixtures.js';
import { gitAsync, removeTempDirs, tempDir } from '../support/git-fixtures.js';
import { eventually } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';

/** A forgesync that ran the demo, and what it served on `/metrics` afterwards. */
export interface DemoRun {
  /** The body of `GET /metrics` over HTTP after the run. */
  scrape: string;
  close(): Promise<void>;
}

const ADMIN = testSecret('DEMO_ADMIN_TOKEN');
const READ = testSecret('DEMO_READ_TOKEN');

/**
 * Runs `forgesync serve`'s parts (HTTP server, scheduler, workers) on the
 * embedded SQLite default with a fake GitHub, and does a little of
 * everything the shipped rules and dashboard chart, so that their metrics
 * have samples (labelled series appear only once counted): a source synced,
 * a signed generic webhook, a feed delivering to an HTTP sink, a GitHub
 * import run to its end, and a clone through the pack cache. Then scrapes
 * `/metrics` as Prometheus would.
 */
export async function runDemo(): Promise<DemoRun> {
  const receiver = await WebhookReceiver.start();
  let harness: ImportHarness | undefined;
  let server: ForgesyncServer | undefined;
  const close = async () => {
    await server?.close();
    await harness?.close();
    await receiver.stop();
    removeTempDirs();
  };
  try {
    harness = await startImportHarness({ env: WEBHOOK_ENV });
    server = await buildServer(harness.app, { tokens: { admin: ADMIN, read: READ } });
    await server.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
    await harness.app.startService();
    await exercise(harness, server, base, receiver);
    const scrape = await (await fetch(`${base}/metrics`)).text();
    return { scrape, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function exercise(harness: ImportHarness, server: ForgesyncServer, base: string, receiver: WebhookReceiver): Promise<void> {
  const auth = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  const upstream = Upstream.create();
  await harness.app.replication.addSource({ name: 'demo', url: upstream.bare });
  await harness.app.replication.sync('demo');

  const feed = await post('/api/feeds', { name: 'demo', sink: receiver.url('/demo'), sources: 'demo' });
  if (feed.status !== 201) throw new Error(`adding the demo feed answered ${feed.status}: ${await feed.text()}`);
  const imported = await post('/api/imports', { project: harness.project, apiUrl: harness.fake.apiUrl, credentials: credentialNames(1) });
  if (imported.status !== 202) throw new Error(`starting the demo import answered ${imported.status}: ${await imported.text()}`);

  // A push announced by a signed webhook: its sync is what the feed then delivers as a partial sync.
  upstream.commit('main');
  const hook = await server.inject(genericDelivery('demo'));
  if (hook.statusCode !== 202) throw new Error(`the generic webhook answered ${hook.statusCode}: ${hook.body}`);
  await eventually('the webhook\'s change to reach the feed sink', () => receiver.accepted.some((entry) => entry.event.type === 'dev.forgesync.ref.updated'), 30_000);

  const name = harness.fake.project.repo.name;
  await eventually('the demo import to finish', async () => {
    const { state } = (await (await fetch(`${base}/api/imports/${name}`, { headers: auth })).json()) as { state: string };
    if (state === 'failed') throw new Error('the demo import failed');
    return state === 'synced';
  }, 60_000);

  // Twice: a miss that generates the pack, then a hit served from the cache.
  for (const attempt of [1, 2]) {
    await gitAsync(tempDir(), '-c', `http.extraHeader=Authorization: Bearer ${READ}`, 'clone', '-q', `${base}/git/demo.git`, `copy-${attempt}`);
  }
}
