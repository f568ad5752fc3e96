import { objectsWithKey, objectsWithNodeId } from '../../../store/graphql-reads.js';
import type { StoredType } from '../../../types.js';
import type { RequestScope } from './context.js';
import { IssueCommentModel, PullRequestReviewModel } from './models/comments.js';
import { IssueModel } from './models/issue.js';
import { LabelModel, MilestoneModel, ReleaseModel } from './models/project-data.js';
import { PullRequestModel } from './models/pull-request.js';
import { RepositoryModel } from './models/repository.js';

/*
 * `node(id:)` and `nodes(ids:)`: the objects answered carry GitHub's own
 * `node_id`s, so a global id is looked up among the stored objects of the
 * imports the reader sees. GitHub's ids name a type and a database id,
 * legacy ones as base64 of `05:Issue1001`, current ones as `I_` + base64url
 * of a MessagePack array ending with the id: both are decoded here to a
 * primary-key lookup (either form of one object's id finds it, as on
 * GitHub). An id that does not decode is looked for in the stored JSON of
 * the types it may name (a scan, so only as the fallback, and only a few
 * times per request), where only an object's own `node_id` counts, not one
 * it embeds.
 */

/** GraphQL type → stored types, and the prefix of its current-format ids. */
const NODE_TYPES: Record<string, { stored: StoredType[]; prefix: string }> = {
  Issue: { stored: ['issue'], prefix: 'I' },
  PullRequest: { stored: ['pull_request'], prefix: 'PR' },
  IssueComment: { stored: ['note'], prefix: 'IC' },
  PullRequestReview: { stored: ['pull_request_review'], prefix: 'PRR' },
  Label: { stored: ['label'], prefix: 'LA' },
  Milestone: { stored: ['milestone'], prefix: 'MI' },
  Release: { stored: ['release'], prefix: 'RE' },
};

/** The last integer of a MessagePack array of integers (GitHub's current ids: `[0, repository id, object id]`). */
function lastMessagePackInteger(bytes: Buffer): number | undefined {
  let offset = 0;
  const head = bytes[offset++];
  if (head === undefined || (head & 0xf0) !== 0x90) return undefined;
  let last: number | undefined;
  for (let index = 0; index < (head & 0x0f); index++) {
    const tag = bytes[offset++];
    if (tag === undefined) return undefined;
    if (tag <= 0x7f) last = tag;
    else if (tag === 0xcc && offset + 1 <= bytes.length) (last = bytes.readUInt8(offset)), (offset += 1);
    else if (tag === 0xcd && offset + 2 <= bytes.length) (last = bytes.readUInt16BE(offset)), (offset += 2);
    else if (tag === 0xce && offset + 4 <= bytes.length) (last = bytes.readUInt32BE(offset)), (offset += 4);
    else if (tag === 0xcf && offset + 8 <= bytes.length) (last = Number(bytes.readBigUInt64BE(offset))), (offset += 8);
    else return undefined;
  }
  return last;
}

/** The GraphQL type and database id a GitHub node id names, when it decodes. */
export function decodeNodeId(id: string): { type: string; databaseId: number } | undefined {
  const current = /^([A-Z]+)_([A-Za-z0-9_-]+)$/.exec(id);
  if (current) {
    const type = Object.entries(NODE_TYPES).find(([, entry]) => entry.prefix === current[1])?.[0];
    const databaseId = type ? lastMessagePackInteger(Buffer.from(current[2]!, 'base64url')) : undefined;
    if (type && databaseId !== undefined) return { type, databaseId };
  }
  const legacy = /^\d+:([A-Za-z]+)(\d+)$/.exec(Buffer.from(id, 'base64').toString('latin1'));
  if (legacy && NODE_TYPES[legacy[1]!]) return { type: legacy[1]!, databaseId: Number(legacy[2]) };
  return undefined;
}

/** The model of a stored object of one of the node types, in its import. */
async function modelOf(request: RequestScope, found: { importId: number; type: string; data: string }) {
  const scope = await request.byId(found.importId);
  if (!scope) return null;
  const json = scope.render(found.data);
  if (json.node_id === undefined) return null;
  const repoHtml = String((await scope.repository())?.html_url ?? '');
  switch (found.type) {
    case 'issue':
      return new IssueModel(json, scope);
    case 'pull_request':
      return new PullRequestModel(json, scope);
    case 'note':
      return new IssueCommentModel(json, scope);
    case 'pull_request_review':
      return new PullRequestReviewModel(json, scope, repoHtml);
    case 'label':
      return new LabelModel(json, repoHtml);
    case 'milestone':
      return new MilestoneModel(json, scope);
    case 'release':
      // Found alone, a release does not know whether it is the latest: `isLatest` is answered through the repository.
      return new ReleaseModel(json, scope, null);
    case 'repository':
      return new RepositoryModel(json, scope);
    default:
      return null;
  }
}

/** The object with global id `id` among the imports the reader sees, or null (GitHub's NOT_FOUND is the caller's). */
export async function nodeById(request: RequestScope, id: string) {
  const importIds = await request.visibleImportIds();
  const decoded = decodeNodeId(id);
  if (decoded) {
    const candidates = await objectsWithKey(request.deps.database, importIds, NODE_TYPES[decoded.type]!.stored, String(decoded.databaseId));
    const match = candidates.find((candidate) => candidate.data.includes(`"node_id":${JSON.stringify(id)}`)) ?? candidates[0];
    if (match) return modelOf(request, match);
  }
  if (!request.takeNodeScan()) return null;
  const stored = [...Object.values(NODE_TYPES).flatMap((entry) => entry.stored), 'repository' as const];
  const found = (await objectsWithNodeId(request.deps.database, importIds, stored, id)).find((row) => (JSON.parse(row.data) as { node_id?: unknown }).node_id === id);
  return found ? modelOf(request, found) : null;
}
