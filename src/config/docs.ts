import type { SettingGroup } from './setting.js';

/**
 * The README's settings table, rendered from the declarations: a test keeps
 * the README equal to it, so the documentation cannot drift from the code.
 */
export function settingsTable(group: SettingGroup): string {
  const rows = Object.values(group).map((setting) => {
    const fallback =
      setting.defaultDoc !== undefined ? setting.defaultDoc : typeof setting.default === 'string' ? `\`${setting.default}\`` : 'none';
    return `| \`${setting.key}\` | \`${setting.env}\` | ${fallback} | ${setting.doc} |`;
  });
  return ['| setting | environment | default | what it is |', '|---|---|---|---|', ...rows].join('\n');
}
