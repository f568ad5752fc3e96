import { execFile } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../support/git-fixtures.js';
import { dashboardQueries, readRules, RULES_FILE, RULES_TEST_FILE } from './shipped-files.js';

/*
 * deploy/prometheus/forgesync.rules.yml under Debian's promtool (installed by
 * `npm test`, see scripts/ensure-clients.mjs): the file is valid, every alert
 * has what an operator needs, and the unit tests beside it (each alert fires
 * on a series that should fire it, stays silent on one that should not) pass,
 * and fail when a rule is broken.
 */

const PROMTOOL = '/usr/bin/promtool';
const run = promisify(execFile);

/** promtool's exit code and output (it exits non-zero on a failed check). */
async function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(PROMTOOL, args);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('the shipped Prometheus rules', () => {
  afterAll(() => removeTempDirs());

  it('pass promtool check rules', async () => {
    const { code, output } = await promtool('check', 'rules', RULES_FILE);
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it('are all alerts, each with a for:, a severity, a summary and a description', () => {
    const rules = readRules();
    expect(rules.length).toBeGreaterThan(10);
    for (const rule of rules) {
      expect(rule.alert, rule.expr).toMatch(/^Forgesync[A-Z]\w+$/);
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description?.length, rule.alert).toBeGreaterThan(40);
    }
  });

  it('pass their promtool unit tests, which cover every alert', async () => {
    const { code, output } = await promtool('test', 'rules', RULES_TEST_FILE);
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
    const tested = new Set([...readFileSync(RULES_TEST_FILE, 'utf8').matchAll(/alertname: (\w+)/g)].map((match) => match[1]));
    const alerts = readRules().map((rule) => rule.alert);
    expect(alerts.filter((alert) => !tested.has(alert))).toEqual([]);
  });

  it('take the dashboard queries as valid PromQL too (checked by promtool as recording rules, Grafana intervals replaced)', async () => {
    const dir = tempDir('forgesync-dashboard-');
    const queries = dashboardQueries();
    // Each expression as JSON, which is YAML: no quoting to get wrong.
    const rules = queries.map(({ expr }, index) => ({ record: `dashboard:query_${index}`, expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$__interval', '1m') }));
    writeFileSync(join(dir, 'dashboard.rules.yml'), JSON.stringify({ groups: [{ name: 'dashboard', rules }] }));
    const { code, output } = await promtool('check', 'rules', join(dir, 'dashboard.rules.yml'));
    expect(output).toContain(`SUCCESS: ${queries.length} rules found`);
    expect(code).toBe(0);
  });

  it('unit tests that fail when a rule is broken (a threshold raised past what the series reach)', async () => {
    const dir = tempDir('forgesync-rules-');
    const broken = readFileSync(RULES_FILE, 'utf8').replace('max by (feed) (forgesync_feed_dead_letters) > 0', 'max by (feed) (forgesync_feed_dead_letters) > 100');
    expect(broken).not.toBe(readFileSync(RULES_FILE, 'utf8'));
    writeFileSync(join(dir, 'forgesync.rules.yml'), broken);
    copyFileSync(RULES_TEST_FILE, join(dir, 'forgesync.rules.test.yml'));
    const { code, output } = await promtool('test', 'rules', join(dir, 'forgesync.rules.test.yml'));
    expect(code).not.toBe(0);
    expect(output).toContain('ForgesyncFeedDeadLetters');
  });
});
