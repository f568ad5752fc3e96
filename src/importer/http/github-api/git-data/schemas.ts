import { z } from 'zod';
import { normaliseSince, PagingQuery, RepoParams } from '../schemas.js';

/*
 * Path and query schemas of the git-data routes, with GitHub's parameter
 * names. Refs and paths are checked again, as git revisions and tree paths,
 * where they are used (snapshots/revision.ts).
 */

const owner = RepoParams.shape.owner;
const repo = RepoParams.shape.repo;
const rest = (what: string) => z.string().min(1).max(4096).describe(what);

export const BranchParams = z.object({ owner, repo, branch: z.string().min(1).max(1024).describe('the branch name (URL-encoded: it may contain slashes)') });
export const WildcardParams = (what: string) => z.object({ owner, repo, '*': rest(what) });
export const OptionalWildcardParams = (what: string) => z.object({ owner, repo, '*': z.string().max(4096).optional().describe(what) });
const sha = z.string().min(1).max(255).describe('an object id (or, for a tree, a ref)');
export const CommitShaParams = z.object({ owner, repo, commit_sha: sha });
export const TreeShaParams = z.object({ owner, repo, tree_sha: sha });
export const BlobShaParams = z.object({ owner, repo, file_sha: sha });

const iso = z
  .string()
  .refine((value) => normaliseSince(value) !== undefined)
  .describe('ISO 8601 time (YYYY-MM-DDTHH:MM:SSZ)');

export const BranchesQuery = PagingQuery.extend({
  protected: z.enum(['true', 'false']).optional().describe('only protected (true) or unprotected (false) branches'),
});

export const CommitsQuery = PagingQuery.extend({
  sha: z.string().min(1).max(255).optional().describe('branch, tag or sha to start from (default: the default branch)'),
  path: z.string().max(4096).optional().describe('only commits touching this path'),
  author: z.string().min(1).max(256).optional().describe('a login or an email address'),
  committer: z.string().min(1).max(256).optional().describe('a login or an email address'),
  since: iso.optional(),
  until: iso.optional(),
});

export const RefQuery = z.object({ ref: z.string().min(1).max(255).optional().describe('branch, tag or sha (default: the default branch)') });
export const TreeQuery = z.object({ recursive: z.string().max(16).optional().describe('any value: the whole tree below it') });

/** The archive formats `/tarball` and `/zipball` redirect to. */
export type ArchiveFormat = 'tar.gz' | 'zip';
export const ArchiveParams = z.object({
  owner,
  repo,
  format: z.enum(['tar.gz', 'zip']).describe('the archive format'),
  sha: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/).describe('the commit (a full object id)'),
});
