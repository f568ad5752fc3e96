// GraphQL for bench/github-api.mjs: the two requests `gh issue list` sends
// (gh 2.23, captured in test/importer/fixtures/gh-queries/issue-list.*.graphql:
// `Issue_fields`, the introspection of Issue's fields it makes first, then
// `IssueList`, the open issues newest first, 30 of them, with labels and page
// info), for the mixed workload; and a probe of `IssueList` alone on the copy
// (the fake GitHub has no GraphQL), beside the REST page of the same issues.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const FIXTURE = (name) => fileURLToPath(new URL(`../../test/importer/fixtures/gh-queries/${name}`, import.meta.url));

/** A captured request: its `# operation:` and `# variables:` header lines, and the query (the lines after them). */
function captured(file) {
  const lines = readFileSync(FIXTURE(file), 'utf8').split('\n');
  const header = (name) => lines.find((line) => line.startsWith(`# ${name}: `))?.slice(name.length + 4);
  return { operationName: header('operation'), variables: JSON.parse(header('variables') ?? '{}'), query: lines.filter((line) => !line.startsWith('#')).join('\n') };
}

/**
 * Inputs: the repository. Returns the JSON bodies of gh's two `gh issue
 * list` requests by name ({ IssueFields, IssueList }), the variables
 * pointed at that repository.
 */
export function ghIssueList({ owner, repo }) {
  const fields = captured('issue-list.1.graphql');
  const list = captured('issue-list.2.graphql');
  return {
    IssueFields: JSON.stringify(fields),
    IssueList: JSON.stringify({ ...list, variables: { ...list.variables, owner, repo } }),
  };
}

/** The REST request that answers what `gh issue list` shows (its open issues, newest first, 30): the fake's stand-in for both. */
export const REST_ISSUE_LIST = '/issues?per_page=30';

function ask(agent, { url, method, headers, body }) {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = http.request({ agent, method, host: target.hostname, port: target.port, path: target.pathname + target.search, headers }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** Requests/s of `requestFor(n)` asked by `connections` clients for `seconds`. */
async function rate(agent, requestFor, { seconds, connections }) {
  let requests = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  const client = async () => {
    while (performance.now() < until) await ask(agent, requestFor(requests++));
  };
  await Promise.all(Array.from({ length: connections }, client));
  return requests / ((performance.now() - started) / 1000);
}

/**
 * Inputs: the copy's address and read token, the repository, how long and
 * with how many connections. Returns requests/s of gh's `IssueList` asked
 * again and again (`remembered`: the same request, answered from the
 * remembered answer) and with a variable the query does not declare varied
 * per request (`computed`: every answer read and executed anew), and of the
 * REST page of the same issues varied the same way (`restComputed`, a
 * parameter the API ignores); undefined when the copy does not answer it.
 */
export async function graphqlProbe({ address, token, owner, repo, seconds, connections }) {
  const headers = { authorization: `bearer ${token}`, 'content-type': 'application/json', 'user-agent': 'forgesync-bench' };
  const body = JSON.parse(ghIssueList({ owner, repo }).IssueList);
  const graphql = (variables) => ({ url: `${address}/github/graphql`, method: 'POST', headers, body: JSON.stringify({ ...body, variables }) });
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  try {
    const probe = await ask(agent, graphql(body.variables));
    if (probe.status !== 200 || (JSON.parse(probe.text).errors ?? []).length > 0) return undefined;
    const varied = await ask(agent, graphql({ ...body.variables, sample: -1 }));
    if (varied.text !== probe.text) return undefined;
    const remembered = await rate(agent, () => graphql(body.variables), { seconds, connections });
    const computed = await rate(agent, (n) => graphql({ ...body.variables, sample: n }), { seconds, connections });
    const rest = (n) => ({ url: `${address}/github/repos/${owner}/${repo}${REST_ISSUE_LIST}&sample=${n}`, method: 'GET', headers });
    const restComputed = await rate(agent, rest, { seconds, connections });
    return { remembered, computed, restComputed };
  } catch {
    return undefined;
  } finally {
    agent.destroy();
  }
}
