import type { RouteDeps, RepoContext } from './context.js';
import { issueDeleted, notFound, type GithubApiError } from './errors.js';
import { highestNumber } from '../../store/read-api.js';

/*
 * What the issue routes share: how an issue is embedded in an event, and
 * what a missing issue number answers.
 */

/**
 * The issue as an event embeds it (`/issues/events`, `/issues/events/{id}`):
 * the issues list's shape (what is stored) without `closed_by`, which
 * GitHub's embedded issue does not carry.
 */
export function embeddedIssue(issue: Record<string, unknown>): Record<string, unknown> {
  const { closed_by: _closedBy, ...embedded } = issue;
  return embedded;
}

/**
 * An issue event as GitHub answers it, from the stored one: with
 * `performed_via_github_app`, which GitHub always sends (null unless an app
 * acted), filled in as null when the stored event lacks it; without the
 * embedded `issue` (the per-issue lists and the timeline do not carry it).
 */
export function issueEvent(event: Record<string, unknown>): Record<string, unknown> {
  const { issue: _issue, ...rest } = event;
  return 'performed_via_github_app' in rest ? rest : { ...rest, performed_via_github_app: null };
}

/**
 * The error for an issue number nothing was imported for: GitHub's 410
 * `This issue was deleted` when the number is at or below the highest
 * imported issue or pull request number (GitHub hands numbers out without
 * gaps, so a number below the newest that has no issue was deleted before
 * the import or since), else 404. While a first import is still under way,
 * an issue not reached yet below the highest one reads as deleted too.
 */
export async function missingIssue(deps: RouteDeps, context: RepoContext, number: number): Promise<GithubApiError> {
  const highest = await highestNumber(deps.database, context.imported.id);
  return highest !== undefined && number <= highest ? issueDeleted() : notFound();
}
