import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig, SETTINGS } from '../../src/app/config.js';
import { settingsTable } from '../../src/config/docs.js';
import type { Setting } from '../../src/config/setting.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('settings, declared once', () => {
  it("the README's settings table is the declarations' table", () => {
    const header = '| setting | environment | default | what it is |';
    const start = README.indexOf(header);
    expect(start, 'README has no settings table').toBeGreaterThan(-1);
    const end = README.indexOf('\n\n', start);
    // On a mismatch, the expected text is the table to paste into the README.
    expect(README.slice(start, end)).toBe(settingsTable(SETTINGS));
  });

  it('keys and environment variables are unique, and every default parses like any given value', () => {
    const config = loadConfig({ cwd: '/srv/app', env: {} }) as unknown as Record<string, unknown>;
    const keys = new Set<string>();
    const envs = new Set<string>();
    for (const [field, setting] of Object.entries(SETTINGS) as [string, Setting<unknown>][]) {
      expect(keys.has(setting.key), `duplicate key ${setting.key}`).toBe(false);
      expect(envs.has(setting.env), `duplicate env ${setting.env}`).toBe(false);
      keys.add(setting.key);
      envs.add(setting.env);
      expect(setting.env).toMatch(/^FORGESYNC_[A-Z_]+$/);
      expect(setting.doc.length).toBeGreaterThan(10);
      // A setting without a default is unset.
      if (setting.default === undefined) expect(config[field], field).toBeUndefined();
      else expect(config[field], field).not.toBeUndefined();
    }
  });
});
