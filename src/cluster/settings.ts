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
  internalListen: setting({
    key: 'internalListen',
    env: 'FORGESYNC_INTERNAL_LISTEN',
    default: '127.0.0.1:0',
    doc: "Where a distributed worker's internal HTTP endpoint listens (`host:port`; port 0 picks a free one): api processes forward snapshot and contents reads of its shard's sources there. Bind a reachable address when the api runs on another machine.",
    parse: (value: unknown) => {
      const given = text()(value);
      if (!/^(?:\[[0-9a-f:.]+\]|[^\s:/[\]]+):\d{1,5}$/i.test(given) || Number(given.slice(given.lastIndexOf(':') + 1)) > 65535) throw new Error('must be host:port, e.g. 0.0.0.0:8081 or [::]:8081');
      return given;
    },
  }),
  internalUrl: setting({
    key: 'internalUrl',
    env: 'FORGESYNC_INTERNAL_URL',
    doc: "The URL api processes reach a worker's internal endpoint at, e.g. `http://10.0.0.7:8081` (default: `http://` and the address it listens on; set it when that address is not reachable as is, e.g. 0.0.0.0).",
    parse: (value: unknown) => {
      const given = text()(value);
      let url: URL;
      try {
        url = new URL(given);
      } catch {
        throw new Error('must be an http:// or https:// URL');
      }
      if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) throw new Error('must be an http:// or https:// URL with no credentials, query or fragment');
      return url.origin + url.pathname.replace(/\/+$/, '');
    },
  }),
};
