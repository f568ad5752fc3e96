import { z } from 'zod';

/*
 * Path and query schemas of the GitHub-compatible API, with GitHub's
 * parameter names (so the OpenAPI document reads like GitHub's). A path
 * parameter that does not validate answers 404, a query value 422
 * (errors.ts).
 */

/** GitHub's own ISO 8601 form and the usual variants: a date, or a date and time with an optional fraction and zone. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * A `since` value as the comparison with stored times needs it: GitHub's
 * form, whole seconds, rounded up (stored times have whole seconds, so
 * `updated_at >= since` keeps exactly the times at or after the given one).
 * A time without a zone is UTC, as GitHub reads it.
 */
export function normaliseSince(value: string): string | undefined {
  if (!ISO_8601.test(value)) return undefined;
  const [date, time = '00:00:00Z'] = value.toUpperCase().split(/[T ]/);
  const zoned = /(?:Z|[+-]\d{2}(?::?\d{2})?)$/.test(time) ? time : `${time}Z`;
  const withColon = `${date}T${zoned.replace(/([+-]\d{2})(\d{2})$/, '$1:$2').replace(/([+-]\d{2})$/, '$1:00')}`;
  const ms = Date.parse(withColon);
  if (!Number.isFinite(ms)) return undefined;
  const iso = new Date(Math.ceil(ms / 1000) * 1000).toISOString();
  return /^\d{4}-/.test(iso) ? iso.replace(/\.\d{3}Z$/, 'Z') : undefined;
}

/** The most label names one `labels=` filter may list. */
export const MAX_LABELS = 100;

/** `labels=bug,Help wanted` as the lower-cased names the `labels` column holds, each once. */
export function labelNames(labels: string | undefined): string[] {
  const names = (labels ?? '').split(',').map((name) => name.trim().toLowerCase());
  return [...new Set(names.filter((name) => name !== ''))];
}

const positiveInteger = z
  .string()
  .regex(/^[0-9]{1,15}$/)
  .transform(Number)
  .refine((n) => n >= 1);

const owner = z.string().min(1).max(100).describe('the account owning the repository (case-insensitive)');
const repo = z.string().min(1).max(100).describe('the repository name (case-insensitive)');

export const RepoParams = z.object({ owner, repo });
/** `/repositories/{repository_id}`: the repository by GitHub's id, the form GitHub's own `Link` headers use. */
export const RepositoryIdParams = z.object({ repository_id: positiveInteger.describe("the repository's GitHub id") });
export const IssueParams = z.object({ owner, repo, issue_number: positiveInteger.describe('the issue or pull request number') });
export const PullParams = z.object({ owner, repo, pull_number: positiveInteger.describe('the pull request number') });
export const BranchProtectionParams = z.object({ owner, repo, branch: z.string().min(1).max(1024).describe('the branch name (URL-encoded: it may contain slashes)') });
export const BranchProtectionWildcardParams = z.object({ owner, repo, '*': z.string().min(1).max(1024).describe('`<branch>/protection`') });
export const MilestoneParams = z.object({ owner, repo, milestone_number: positiveInteger.describe('the milestone number') });
export const LabelParams = z.object({ owner, repo, name: z.string().min(1).max(1024).describe('the label name (case-insensitive, URL-encoded)') });
export const ReleaseParams = z.object({ owner, repo, release_id: positiveInteger.describe('the release id') });
export const ReleaseTagParams = z.object({ owner, repo, tag: z.string().min(1).max(1024).describe('the tag name (URL-encoded)') });
export const CommentParams = z.object({ owner, repo, comment_id: positiveInteger.describe('the comment id') });
export const EventParams = z.object({ owner, repo, event_id: positiveInteger.describe('the event id') });
export const ReviewParams = z.object({ owner, repo, pull_number: positiveInteger.describe('the pull request number'), review_id: positiveInteger.describe('the review id') });
export const UserParams = z.object({ username: z.string().min(1).max(100).describe('the login (case-insensitive)') });
export const AttachmentParams = z.object({
  name: z.string().min(1).max(200).describe('the import name'),
  url_key: z.string().regex(/^[0-9a-f]{64}$/).describe('SHA-256 of the attachment URL, hex'),
  filename: z.string().min(1).max(1024).describe('the attachment file name (informative)'),
});

const direction = z.enum(['asc', 'desc']);
const since = z
  .string()
  .refine((value) => normaliseSince(value) !== undefined)
  .describe('ISO 8601 time (YYYY-MM-DDTHH:MM:SSZ): only what was updated at or after it');

/** A whole number, signed: GitHub takes `per_page=0` (the default size) and `page=-1` (the first page) rather than refusing them. */
const wholeNumber = z
  .string()
  .regex(/^-?[0-9]{1,15}$/)
  .transform(Number);

const paging = {
  per_page: wholeNumber.optional().describe('results per page (default 30, also for 0 or less; at most 100: larger values count as 100)'),
  page: wholeNumber.optional().describe('page number, from 1 (0 or less: the first)'),
};

/** A login as a filter value (`assignee=`, `creator=`, `mentioned=`). */
const login = z.string().min(1).max(100);

export const PagingQuery = z.object(paging);

export const IssuesQuery = z.object({
  state: z.enum(['open', 'closed', 'all']).default('open'),
  labels: z
    .string()
    .max(8192)
    .refine((value) => labelNames(value).length <= MAX_LABELS)
    .optional()
    .describe(`comma-separated label names, all required (case-insensitive; at most ${MAX_LABELS})`),
  since: since.optional(),
  sort: z.enum(['created', 'updated', 'comments']).default('created'),
  direction: direction.default('desc'),
  milestone: z
    .string()
    .regex(/^(?:\*|none|[0-9]{1,15})$/)
    .optional()
    .describe('a milestone number (it must exist), `*` for any milestone, `none` for none'),
  assignee: login.optional().describe('a login among the assignees, `*` for any assignee, `none` for none'),
  creator: login.optional().describe("the author's login"),
  mentioned: login.optional().describe('a login @-mentioned in the body or a comment (outside code)'),
  ...paging,
});

export const CommentsQuery = z.object({ since: since.optional(), ...paging });

export const RepoCommentsQuery = z.object({
  sort: z.enum(['created', 'updated']).optional().describe('without it: by id, oldest first'),
  direction: direction.default('asc').describe('with `sort` only'),
  since: since.optional(),
  ...paging,
});

export const ReviewCommentsQuery = z.object({
  sort: z.enum(['created', 'updated', 'created_at']).optional().describe('without it: by id'),
  direction: direction.default('asc').describe('with `sort` only'),
  since: since.optional(),
  ...paging,
});

export const PullsQuery = z.object({
  state: z.enum(['open', 'closed', 'all']).default('open'),
  head: z.string().min(1).max(1024).optional().describe('`owner:ref` of the head branch (the owner in any case); without the owner it is ignored, as by GitHub'),
  base: z.string().min(1).max(1024).optional().describe('the base branch name'),
  sort: z
    .enum(['created', 'updated', 'popularity', 'long-running'])
    .default('created')
    .describe('`popularity`: by comment count; `long-running`: those older than a month and active within it, by age'),
  direction: direction.optional().describe('default: `desc` for `created`, else `asc`'),
  ...paging,
});

export const CollaboratorsQuery = z.object({
  affiliation: z.enum(['outside', 'direct', 'all']).default('all'),
  permission: z.enum(['pull', 'triage', 'push', 'maintain', 'admin']).optional().describe('only those who have this permission'),
  ...paging,
});

export const MilestonesQuery = z.object({
  state: z.enum(['open', 'closed', 'all']).default('open'),
  sort: z.enum(['due_on', 'completeness']).default('due_on'),
  direction: direction.default('asc'),
  ...paging,
});
