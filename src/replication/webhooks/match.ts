import type { Replication } from '../module.js';
import { SourceNotFoundError } from '../../store/errors.js';
import type { Source } from '../../store/types.js';
import type { DeliveryIntent, DeliveryOutcome } from './delivery.js';

/**
 * Records a webhook sync request for every enabled source whose match key
 * is among `keys` (one indexed UPDATE, see replication/store/match-requests.ts), and
 * says how the delivery is answered: 202 accepted with the source names,
 * 202 ignored when only disabled sources match, 202 unknown_repository when
 * none does (nothing recorded).
 */
export async function requestMatching(
  replication: Replication,
  event: string,
  keys: ReadonlyArray<string | null | undefined>,
  note?: string,
): Promise<DeliveryOutcome> {
  const wanted = [...new Set(keys.filter((key): key is string => typeof key === 'string' && key !== ''))];
  if (wanted.length === 0) {
    return { status: 202, result: 'unknown_repository', event, reason: 'the payload names no repository URL' };
  }
  const matched = await replication.requestSyncMatching(wanted);
  if (matched.length > 0) return accepted(event, matched.map((source) => source.name), note);
  // Nothing recorded: say whether a disabled source matched (a read only on this rare path).
  const disabled = (await replication.sources.findByMatchKeys(wanted)).length > 0;
  return notRequested(event, disabled);
}

/** Records a webhook request for each enabled source of `sources` (the generic hook's source by name). */
export async function requestSources(replication: Replication, event: string, sources: Source[]): Promise<DeliveryOutcome> {
  const requested: string[] = [];
  for (const source of sources.filter((s) => s.enabled)) {
    try {
      await replication.requestSync(source, { trigger: 'webhook' });
      requested.push(source.name);
    } catch (error) {
      if (!(error instanceof SourceNotFoundError)) throw error; // removed meanwhile: nothing to sync
    }
  }
  if (requested.length > 0) return accepted(event, requested);
  return notRequested(event, sources.length > 0);
}

function accepted(event: string, sources: string[], note?: string): DeliveryOutcome {
  return { status: 202, result: 'accepted', event, sources, ...(note ? { reason: note } : {}) };
}

function notRequested(event: string, disabled: boolean): DeliveryOutcome {
  if (disabled) return { status: 202, result: 'ignored', event, reason: 'the matching source is disabled' };
  return { status: 202, result: 'unknown_repository', event, reason: 'no source matches this repository' };
}

/**
 * Answers a read delivery: as it stands, or by recording its sync request
 * (see requestMatching) and handing its project delivery to the imports
 * that follow the repository (each records what it will fetch before this
 * returns); accepted when either did something.
 */
export async function actOn(replication: Replication, intent: DeliveryIntent): Promise<DeliveryOutcome> {
  if ('answer' in intent) return intent.answer;
  let outcome: DeliveryOutcome | undefined;
  if ('request' in intent) {
    const { event, keys, note, warnWhenAccepted } = intent.request;
    outcome = await requestMatching(replication, event, keys, note);
    if (warnWhenAccepted && outcome.result === 'accepted') outcome = { ...outcome, warn: true };
  }
  const { project } = intent;
  if (!project) return outcome!;
  const imports = await replication.projectFollowers.deliver(project);
  if (imports && imports.length > 0) {
    const accepted = outcome?.result === 'accepted' ? outcome : { status: 202, result: 'accepted' as const, event: project.event };
    return { ...accepted, imports };
  }
  if (outcome) return outcome;
  const reason = imports ? 'no import follows this repository' : 'no importer runs in this server to follow project data';
  return { status: 202, result: imports ? 'unknown_repository' : 'ignored', event: project.event, reason };
}
