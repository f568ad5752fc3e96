// Webhook intake of bench/scale.mjs: signed GitHub push deliveries,
// unthrottled, against a lone `forgesync serve --role api` process and against
// bare Fastify's hello-world (the ceiling), on the same machine. See the
// method in bench/scale.mjs's header.
import { pushDelivery } from './push-delivery.mjs';
import { runStage } from './webhooks-load.mjs';
import { cpuMsOf, startHello, stop } from './webhooks-procs.mjs';
import { progress } from './util.mjs';


/**
 * Starts the api process (the scheduler keeps running), warms up both
 * servers alike, and runs hello; api twice with no worker running (the
 * requests are recorded and queued, the syncs wait: the api's own work, as
 * with the workers on other machines); a worker
 * started and caught up; api with that worker syncing meanwhile (on the same
 * CPUs); the catch-up; hello again (the better hello is the ceiling).
 */
export async function measureIntake(cluster, { secret, count, concurrency = 64, maxMs = 60_000, nodeArgs = [] }) {
  await cluster.keepWorkers(0);
  progress('starting the api process and the hello-world server');
  const [api, hello] = await Promise.all([cluster.start('api', undefined, nodeArgs), startHello()]);
  try {
    const items = cluster.upstreams.map((upstream, i) => pushDelivery(secret, upstream, `bench/${cluster.names[i]}`));
    const common = { items, count, rate: null, concurrency, maxMs };
    const runHello = async (which) => {
      progress(`intake: hello (${which})`);
      const cpu = cpuMsOf(hello.child.pid);
      const run = await runStage({ ...common, url: `${hello.address}/hooks/github`, accepted: (status) => status === 200 });
      run.serverCpuMsPerDelivery = (cpuMsOf(hello.child.pid) - cpu) / Math.max(1, run.completed);
      return run;
    };
    const runApi = async (which) => {
      progress(`intake: api (${which})`);
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
        url: `${api.address}/hooks/github`,
        accepted: (status, body) => status === 202 && body.includes('"result":"accepted"'),
        onProgress: (sent) => progress(`intake: api (${which}) ${sent}/${count}`),
      });
      const after = await usage();
      let postgres = 0;
      for (const [pid, ms] of after.postgres) postgres += ms - (before.postgres.get(pid) ?? 0);
      const n = Math.max(1, run.completed);
      const per = { api: (after.api - before.api) / n, postgres: postgres / n, redis: (after.redis - before.redis) / n, workers: (after.workers - before.workers) / n };
      run.serverCpuMsPerDelivery = per.api;
      run.elsewhereCpuMsPerDelivery = per;
      run.workers = workerPids.length;
      return run;
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
    for (const server of [hello, api]) await runStage({ ...common, count, url: `${server.address}/hooks/github`, accepted: () => true });
    const before = await runHello('before');
    // The better of two runs, as for hello.
    const aloneRuns = [await runApi('no worker, 1'), await runApi('no worker, 2')];
    const alone = aloneRuns[0].acceptedPerSec >= aloneRuns[1].acceptedPerSec ? aloneRuns[0] : aloneRuns[1];
    alone.runsPerSec = aloneRuns.map((run) => run.acceptedPerSec);
    progress('intake: starting a worker');
    await cluster.startWorker();
    alone.catchUpMs = await catchUp();
    const withWorker = await runApi('1 worker');
    withWorker.catchUpMs = await catchUp();
    const after = await runHello('after');
    const ceiling = after.acceptedPerSec > before.acceptedPerSec ? after : before;
    progress('');
    return {
      hello: { ...ceiling, runsPerSec: [before.acceptedPerSec, after.acceptedPerSec] },
      alone,
      withWorker,
      ratio: alone.acceptedPerSec / ceiling.acceptedPerSec,
      ratioWithWorker: withWorker.acceptedPerSec / ceiling.acceptedPerSec,
    };
  } finally {
    await Promise.all([stop(api.child), stop(hello.child)]);
  }
}
