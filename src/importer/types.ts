/**
 * What the GitHub importer stores, and the names other tools see.
 *
 * Every object GitHub returned is one `import_objects` row: `(import_id,
 * type, key)` is its identity (GitHub's id, so upserts are idempotent), `data`
 * the JSON exactly as GitHub gave it (except where noted), and a few columns
 * copied out of it for the GitHub-compatible API to filter and sort on:
 *
 * | type                          | key                         | number            | parent      | other columns                                   |
 * |-------------------------------|-----------------------------|-------------------|-------------|-------------------------------------------------|
 * | `repository` (internal)       | `repository`                | repository id     | —           | data: `GET /repos/{o}/{r}`; number: its GitHub id (`/repositories/{id}`) |
 * | `issue`                       | id                          | issue number      | —           | state, created_at, updated_at, labels, comments |
 * | `pull_request_issue` (internal) | id                        | PR number         | —           | as `issue`: the PR's entry in `/issues`         |
 * | `pull_request`                | id                          | PR number         | —           | state, created_at, updated_at; data: the `/pulls` list item, with `merged_by` filled in from the `merged` event |
 * | `note`                        | id                          | issue/PR number   | —           | created_at, updated_at                          |
 * | `diff_note`                   | id                          | PR number         | —           | created_at, updated_at                          |
 * | `pull_request_review`         | id                          | PR number         | —           | created_at (= submitted_at)                     |
 * | `pull_request_review_request` | `<n>/user/<login>`, `<n>/team/<slug>` | PR number | —        | data: the user or team                          |
 * | `pull_request_merged_by`      | PR number                   | PR number         | —           | data: the user                                  |
 * | `issue_event`                 | id                          | issue/PR number   | —           | created_at; data as `/issues/events` gives it, without the embedded `issue` (the number says which) |
 * | `label`                       | id                          | —                 | —           | state: the lower-cased name                     |
 * | `milestone`                   | id                          | milestone number  | —           | state, created_at, updated_at                   |
 * | `release`                     | id                          | —                 | —           | created_at; data with `assets` as GitHub embeds them |
 * | `release_asset`               | id                          | —                 | release id  |                                                 |
 * | `attachment`                  | url key (see below)         | —                 | —           | data: `{ url, sha256, size, content_type, filename }` |
 * | `collaborator`                | user id                     | —                 | —           | state: the lower-cased login; labels: the permissions its `permissions` grants; data: the `affiliation=all` list item |
 * | `collaborator_direct` (internal) | user id                  | —                 | —           | data: the `affiliation=direct` list item (marks the collaborator direct) |
 * | `collaborator_outside` (internal) | user id                 | —                 | —           | data: the `affiliation=outside` list item (marks it outside the organisation) |
 * | `protected_branch`            | branch name                 | —                 | —           | data: `GET …/branches/{b}/protection`           |
 * | `issue_deleted` (internal)    | issue number                | issue number      | —           | data: `{}`; an issue the copy saw deleted upstream (its number answers 410) |
 *
 * `labels` holds the lower-cased label names, each between newlines
 * (`\nbug\nhelp wanted\n`). Lists without a number sort by the key as a
 * number (GitHub's ids grow with time).
 *
 * Users are shared across imports (`github_users`, per API host, keyed by
 * the lower-cased login); `import_users` lists the logins that appear in
 * one import. Attachments: `import_attachments` has one row per distinct URL
 * found in a body (key: {@link urlKey}), and the bytes are stored once per
 * content at `<dataDir>/import-files/<sha256>`.
 */

/** The object types, as counts, logs and metrics name them (a contract). */
export const OBJECT_TYPES = [
  'issue',
  'pull_request',
  'note',
  'diff_note',
  'pull_request_review',
  'pull_request_review_request',
  'pull_request_merged_by',
  'issue_event',
  'label',
  'milestone',
  'release',
  'release_asset',
  'attachment',
  'collaborator',
  'protected_branch',
  'user',
] as const;

export type ObjectType = (typeof OBJECT_TYPES)[number];

/** Rows stored for the importer's own use, never counted. */
export type InternalType = 'repository' | 'pull_request_issue' | 'collaborator_direct' | 'collaborator_outside' | 'issue_deleted';

export type StoredType = Exclude<ObjectType, 'user'> | InternalType;

/** Per type, how many objects: `{ issue: 12, note: 40, … }` (every type present, 0 when none). */
export type TypeCounts = Record<ObjectType, number>;

export function emptyCounts(): TypeCounts {
  return Object.fromEntries(OBJECT_TYPES.map((type) => [type, 0])) as TypeCounts;
}

/** The stages of an import, in order. */
export const STAGES = [
  'repository',
  'base_data',
  'pull_requests',
  'collaborators',
  'issues',
  'events',
  'notes',
  'reviews',
  'attachments',
  'protected_branches',
  'finish',
] as const;

export type Stage = (typeof STAGES)[number];

/** The key of an attachment URL: the SHA-256 of the URL, hex (URLs can be long; keys stay short). */
export { urlKey } from './attachments/url-key.js';
