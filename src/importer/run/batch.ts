import type { Compilable } from 'kysely';
import { filesIn, loginsIn } from '../attachments/scan.js';
import { addFilesStep, type FoundFile } from '../store/attachments.js';
import { appendChangeSteps } from '../../store/change-log.js';
import { objectChanges, upsertObjectSteps, type ObjectRow } from '../store/objects.js';
import { addLoginsStep } from '../store/users.js';
import type { RunContext } from './context.js';
import { checkObjectRow } from './shape.js';

/**
 * What one page (or one job) stores, gathered while its items are mapped:
 * the objects, the logins that appear in them, the files their bodies link
 * to, and any further statements; `steps()` turns it into the batch.
 */
export class PageBatch {
  readonly objects: ObjectRow[] = [];
  readonly logins = new Set<string>();
  readonly files: FoundFile[] = [];
  readonly extra: (Compilable | null)[] = [];

  constructor(private readonly ctx: Pick<RunContext, 'db' | 'importId' | 'run' | 'hosts' | 'importName'>) {}

  /**
   * Adds an object, and the logins and linked files in its JSON.
   * @throws GithubAnswerError when the upstream gave a row that cannot be stored (see shape.ts).
   */
  add(row: ObjectRow): this {
    checkObjectRow(row);
    this.objects.push(row);
    // The repository names only its owner, whose profile is the organisation's, not a participant's.
    if (row.type !== 'repository') loginsIn(row.data, this.logins);
    const data = row.data as { body?: unknown } | null;
    if (data && typeof data === 'object') for (const file of filesIn(data.body, this.ctx.hosts)) this.files.push(file);
    return this;
  }

  /** The batch's statements, with the change log entries of the objects that changed (see change-log.ts). */
  async steps(): Promise<(Compilable | null)[]> {
    const { db, importId, run } = this.ctx;
    const changes = await objectChanges(db, importId, this.ctx.importName, this.objects);
    const now = Date.now();
    return [
      ...upsertObjectSteps(db, importId, run, this.objects),
      addLoginsStep(db, importId, run, this.logins),
      addFilesStep(db, importId, run, this.files, now),
      ...appendChangeSteps(db, changes, now),
      // Last: a stage may take its extra statements back off the end (see collections.ts).
      ...this.extra,
    ];
  }
}

/** The number in the last path segment of a GitHub URL (`…/issues/12` → 12). */
export function numberFromUrl(url: unknown): number | null {
  if (typeof url !== 'string') return null;
  const number = Number(/\/(\d+)\/?$/.exec(url)?.[1]);
  return Number.isSafeInteger(number) ? number : null;
}

/** Label names of an issue's `labels` (objects or strings). */
export function labelNames(labels: unknown): string[] {
  if (!Array.isArray(labels)) return [];
  return labels.map((label) => (typeof label === 'string' ? label : String((label as { name?: unknown })?.name ?? ''))).filter((name) => name !== '');
}
