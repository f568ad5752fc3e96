// GraphQL for bench/github-api.mjs: the query `gh issue list` sends (its shape:
// the open issues newest first, 30 of them, with labels, author and the page
// info), measured on the copy only when `/github/graphql` answers it without
// errors; the fake GitHub has no GraphQL to compare with.

import http from 'node:http';
import { performance } from 'node:perf_hooks';

const ISSUE_LIST = `query IssueList($owner: String!, $repo: String!, $limit: Int, $endCursor: String, $states: [IssueState!] = OPEN) {
  repository(owner: $owner, name: $repo) {
    hasIssuesEnabled
    issues(first: $limit, after: $endCursor, orderBy: {field: CREATED_AT, direction: DESC}, states: $states) {
      totalCount
      nodes { number title url state updatedAt labels(first: 100) { nodes { name color } totalCount } author { login } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

function post(agent, url, token, body) {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = http.request(
      { agent, method: 'POST', host: target.hostname, port: target.port, path: target.pathname, headers: { authorization: `bearer ${token}`, 'content-type': 'application/json', 'user-agent': 'forgesync-bench' } },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * Inputs: the copy's address and read token, the repository, how long and
 * with how many connections. Returns { perSecond, requests } of the query
 * asked again and again, or undefined when the copy does not answer it.
 */
export async function graphqlProbe({ address, token, owner, repo, seconds, connections }) {
  const url = `${address}/github/graphql`;
  const body = JSON.stringify({ query: ISSUE_LIST, variables: { owner, repo, limit: 30 } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  try {
    const probe = await post(agent, url, token, body);
    if (probe.status !== 200 || (JSON.parse(probe.text).errors ?? []).length > 0) return undefined;
    let requests = 0;
    const started = performance.now();
    const until = started + seconds * 1000;
    const client = async () => {
      while (performance.now() < until) {
        await post(agent, url, token, body);
        requests++;
      }
    };
    await Promise.all(Array.from({ length: connections }, client));
    return { perSecond: requests / ((performance.now() - started) / 1000), requests };
  } catch {
    return undefined;
  } finally {
    agent.destroy();
  }
}
