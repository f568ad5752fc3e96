import { describe, expect, it } from 'vitest';
import { createTestDatabase, openTestForgesync, testConfig } from '../support/harness.js';
import { startTestServer } from '../support/test-server.js';

/*
 * forgesync_ready, which ForgesyncNotReady watches: the same checks as
 * /readyz, run at each scrape of /metrics, so the two always agree.
 */

describe('forgesync_ready on /metrics', () => {
  it('is 1 while /readyz answers 200, and 0 once the lease backend is gone, as /readyz answers 503', async () => {
    const t = await startTestServer();
    try {
      const scrape = async () => (await t.server.inject({ method: 'GET', url: '/metrics' })).body;
      expect((await t.server.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      expect(await scrape()).toMatch(/^forgesync_ready 1$/m);

      await t.app.kernel.leases.close();
      expect((await t.server.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
      expect(await scrape()).toMatch(/^forgesync_ready 0$/m);
    } finally {
      await t.close();
    }
  });

  it('is 0 with the database gone, the rest of the scrape still served (the gauges read from it left out)', async () => {
    const t = await startTestServer();
    try {
      await t.app.kernel.database.close();
      expect((await t.server.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
      const scrape = await t.server.inject({ method: 'GET', url: '/metrics' });
      expect(scrape.statusCode).toBe(200);
      expect(scrape.body).toMatch(/^forgesync_ready 0$/m);
      expect(scrape.body).toMatch(/^forgesync_syncs_total|^# TYPE forgesync_syncs_total counter$/m);
    } finally {
      await t.close();
    }
  });

  it('is in the registry of a process that serves no public HTTP (a worker scraped on its internal endpoint)', async () => {
    const { app } = await openTestForgesync(testConfig((await createTestDatabase('sqlite')).url));
    try {
      expect(await app.kernel.metrics.metrics()).toMatch(/^forgesync_ready 1$/m);
    } finally {
      await app.close();
    }
  });
});
