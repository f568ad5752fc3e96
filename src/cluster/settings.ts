import { duration, setting, text } from '../config/setting.js';
import { parseRoles, rolesText } from './roles.js';

/** A shard id: what FORGESYNC_SHARD may be (it names queues and appears in paths and URLs). */
export const SHARD_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** Settings of distributed mode: which roles a process runs and which storage shard a worker owns. */
export const clusterSettings = {
  role: setting({
    key: 'role',
    env: 'FORGESYNC_ROLE',
    default: 'all',
    doc: 'What `forgesync serve` runs: `all` (one process does everything, the embedded mode), or a comma list of `api` (HTTP, webhooks, dashboard), `worker` (jobs for its shard), `scheduler` (the schedulers). A distributed role needs PostgreSQL, shared leases and BullMQ.',
    // Kept as text (normalised: `all` or the list in order); parseRoles gives the flags.
    parse: (value: unknown) => rolesText(parseRoles(text()(value))),
  }),
  shardId: setting({
    key: 'shard',
    env: 'FORGESYNC_SHARD',
    default: 'local',
    doc: "The storage shard a worker owns: its data dir holds the mirrors of the sources placed on it. Lower-case letters, digits, `-` and `_`.",
    parse: text({ pattern: SHARD_ID, message: 'must be lower-case letters, digits, - and _ (at most 63), starting with a letter or digit' }),
  }),
  movedCopyGraceMs: setting({
    key: 'movedCopyGrace',
    env: 'FORGESYNC_MOVED_COPY_GRACE',
    default: '1h',
    doc: "How long a worker keeps its copy of a source moved to another shard (untouched that long, it is deleted by the shard's janitor).",
    parse: duration(0),
  }),
  clusterToken: setting({
    key: 'clusterToken',
    env: 'FORGESYNC_CLUSTER_TOKEN',
    doc: "Shared secret of the cluster's internal HTTP endpoints (an api process forwarding reads to the worker owning a source's shard).",
    parse: text({ minLength: 16 }),
  }),
};
