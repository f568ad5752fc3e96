import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The shipped rules file, its promtool unit tests and the Grafana dashboard. */
export const RULES_FILE = fileURLToPath(new URL('../../deploy/prometheus/forgesync.rules.yml', import.meta.url));
export const RULES_TEST_FILE = fileURLToPath(new URL('../../deploy/prometheus/forgesync.rules.test.yml', import.meta.url));
export const DASHBOARD_FILE = fileURLToPath(new URL('../../deploy/grafana/forgesync.json', import.meta.url));

/** One PromQL expression of a shipped file and where it is (for the failure message). */
export interface ShippedQuery {
  where: string;
  expr: string;
}

/** A rule of the rules file, as far as the tests read it. */
export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every rule of the rules file, all groups. */
export function readRules(): Rule[] {
  const file = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
  return file.groups.flatMap((group) => group.rules);
}

/** The `expr` of every rule of the rules file. */
export function ruleQueries(): ShippedQuery[] {
  return readRules().map((rule) => ({ where: `rule ${rule.alert ?? rule.record}`, expr: rule.expr }));
}

interface Panel {
  title?: string;
  type: string;
  panels?: Panel[];
  targets?: { expr?: string; refId?: string }[];
}

interface Dashboard {
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** The `expr` of every target of every panel (rows' nested panels included) and of every query variable. */
export function dashboardQueries(dashboard: Dashboard = readDashboard()): ShippedQuery[] {
  const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
  const targets = panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}" ${target.refId}`, expr: target.expr ?? '' })));
  const variables = dashboard.templating.list
    .filter((variable) => variable.type === 'query')
    .map((variable) => ({ where: `variable ${variable.name}`, expr: typeof variable.query === 'string' ? variable.query : String((variable.query as { query?: string })?.query ?? '') }));
  return [...targets, ...variables];
}
