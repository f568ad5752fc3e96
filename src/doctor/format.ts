import type { CheckStatus, DoctorReport } from './types.js';

const MARKS: Record<CheckStatus, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };

/** The report for a person: one line per check, its hint indented under it, a summary last. */
export function reportText(report: DoctorReport): string {
  const width = Math.max(...report.checks.map((check) => check.name.length));
  const lines: string[] = [];
  for (const check of report.checks) {
    lines.push(`${MARKS[check.status]}  ${check.name.padEnd(width)}  ${check.detail}`);
    if (check.hint) lines.push(`${' '.repeat(width + 8)}→ ${check.hint}`);
  }
  const count = (status: CheckStatus) => report.checks.filter((check) => check.status === status).length;
  lines.push('', `${count('ok')} ok, ${count('warn')} warnings, ${count('fail')} failed${report.ok ? '' : ': fix the failures above before running forgesync serve'}`);
  return `${lines.join('\n')}\n`;
}
