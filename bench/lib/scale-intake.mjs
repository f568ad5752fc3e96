// Webhook intake of bench/scale.mjs: signed GitHub push deliveries,
// unthrottled, against a lone `forgesync serve --role api` process and against
// bare Fastify's hello-world (the ceiling), on the same machine. See the
// method in bench/scale.mjs's header.
import { pushDelivery } from './push-delivery.mjs';
import { runStage } from './webhooks-load.mjs';
import { cpuMsOf, startHello, stop } from './webhooks-procs.mjs';
import { progress } from './util.mjs';


/** The run with the higher accepted rate. */
const better = (a, b) => (b.acceptedPerSec > a.acceptedPerSec ? b : a);

/** The median run by accepted rate (of an even number, the lower middle one). */
function median(runs) {
  const sorted = [...runs].sort((a, b) => a.acceptedPerSec - b.acceptedPerSec);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * Starts the api process (the scheduler keeps running) and warms up both
 * servers alike. Then, at each number of connections in `levels`, `runs`
 * runs of each server in turn (hello, api, hello, api…: a machine that
 * speeds up or slows down meanwhile weighs on both), the api with no worker
 * running (the requests are recorded and queued, the syncs wait: the api's
 * own work, as with the workers on other machines). Each server's
 * unthrottled rate is its best run at its best level: a server that commits
 * deliveries in groups needs more of them in flight to reach its rate than
 * one that answers each at once. Last, a worker is started and caught up,
 * and the api runs again at its best level with that worker syncing
 * meanwhile (on the same CPUs).
 */
export async function measureIntake(cluster, { secret, count, levels = [64, 256], runs = 3, maxMs = 60_000, nodeArgs = [] }) {
  await cluster.keepWorkers(0);
  progress('starting the api process and the hello-world server');
  const [api, hello] = await Promise.all([cluster.start('api', undefined, nodeArgs), startHello()]);
  try {
    const items = cluster.upstreams.map((upstream, i) => pushDelivery(secret, upstream, `bench/${cluster.names[i]}`));
    const common = { items, count, rate: null, maxMs };
    const runHello = async (concurrency, which) => {
      progress(`intake: hello, ${concurrency} connections (${which})`);
      const cpu = cpuMsOf(hello.child.pid);
      const run = await runStage({ ...common, concurrency, url: `${hello.address}/hooks/github`, accepted: (status) => status === 200 });
      run.serverCpuMsPerDelivery = (cpuMsOf(hello.child.pid) - cpu) / Math.max(1, run.completed);
      return Object.assign(run, { concurrency });
    };
    const runApi = async (concurrency, which) => {
      progress(`intake: api, ${concurrency} connections (${which})`);
      const workerPids = cluster.workers.map((w) => w.child.pid);
      // CPU of everything a delivery costs. A PostgreSQL backend that appears meanwhile (a pool
      // growing) counts from 0; one that ends meanwhile is missed.
      const usage = async () => {
        const { postgres, redis } = await cluster.backendPids();
        return { api: cpuMsOf(api.child.pid), postgres: new Map(postgres.map((pid) => [pid, cpuMsOf(pid) || 0])), redis: cpuMsOf(redis), workers: workerPids.reduce((sum, pid) => sum + (cpuMsOf(pid) || 0), 0) };
      };
      const before = await usage();
      const run = await runStage({
        ...common,
        concurrency,
        url: `${api.address}/hooks/github`,
        accepted: (status, body) => status === 202 && body.includes('"result":"accepted"'),
        onProgress: (sent) => progress(`intake: api, ${concurrency} connections (${which}) ${sent}/${count}`),
      });
      const after = await usage();
      let postgres = 0;
      for (const [pid, ms] of after.postgres) postgres += ms - (before.postgres.get(pid) ?? 0);
      const n = Math.max(1, run.completed);
      const per = { api: (after.api - before.api) / n, postgres: postgres / n, redis: (after.redis - before.redis) / n, workers: (after.workers - before.workers) / n };
      return Object.assign(run, { concurrency, serverCpuMsPerDelivery: per.api, elsewhereCpuMsPerDelivery: per, workers: workerPids.length });
    };
    // A row a kill left failed waits for its retry; it does not hold up the measurement.
    const catchUp = async () => {
      progress('intake: waiting for the worker to serve the requests');
      const t0 = Date.now();
      await cluster.waitCaughtUp(300_000, 20, { ignoreFailed: true });
      return Date.now() - t0;
    };
    // Untimed and alike for both servers: a server is measured in its steady state, once its
    // JIT has optimised the hot paths (a thousand deliveries leave hundreds of functions still
    // to compile, on the same CPUs) and the api's database pool has opened its connections.
    progress('intake: warm-up');
    for (const server of [hello, api]) await runStage({ ...common, concurrency: levels[0], url: `${server.address}/hooks/github`, accepted: () => true });
    const byLevel = [];
    for (const concurrency of levels) {
      const hellos = [];
      const apis = [];
      for (let i = 1; i <= runs; i++) {
        hellos.push(await runHello(concurrency, i));
        apis.push(await runApi(concurrency, i));
      }
      byLevel.push({ concurrency, hello: median(hellos), alone: median(apis), helloRuns: hellos.map((r) => r.acceptedPerSec), aloneRuns: apis.map((r) => r.acceptedPerSec) });
    }
    const ceiling = byLevel.map((level) => level.hello).reduce(better);
    const alone = byLevel.map((level) => level.alone).reduce(better);
    progress('intake: starting a worker');
    await cluster.startWorker();
    alone.catchUpMs = await catchUp();
    const withWorker = await runApi(alone.concurrency, '1 worker');
    withWorker.catchUpMs = await catchUp();
    progress('');
    return {
      levels: byLevel,
      hello: ceiling,
      alone,
      withWorker,
      ratio: alone.acceptedPerSec / ceiling.acceptedPerSec,
      ratioWithWorker: withWorker.acceptedPerSec / ceiling.acceptedPerSec,
    };
  } finally {
    await Promise.all([stop(api.child), stop(hello.child)]);
  }
}
