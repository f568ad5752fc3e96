#!/usr/bin/env node
// Extracts, from GitHub's OpenAPI description (package @octokit/openapi, the
// api.github.com spec), the example payloads and the response schemas of the
// operations the fake GitHub (test/fake-github) serves, into two checked-in
// fixtures:
//
//   test/fake-github/openapi-examples.json  { source, operations: { "<tag>/<op>": { method, path, example } } }
//   test/fake-github/openapi-schemas.json   { source, operations: { "<tag>/<op>": <schema> }, components: { <name>: <schema> } }
//
// Schemas keep their `$ref`s ("#/components/schemas/<name>"); only the
// components reachable from the chosen operations are kept, with the keywords a
// validator does not need (descriptions, examples, titles, docs links) removed.
//
// The spec is not a dependency of forgesync. Fetch it only temporarily, e.g.
//   cd /tmp && npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-23.0.2.tgz
//   node scripts/extract-github-openapi.mjs /tmp/package/generated/api.github.com.json
// or `npm i --no-save @octokit/openapi@23.0.2` and run it without an argument.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** operationId → which named example to take (first one when absent). */
const OPERATIONS = {
  'repos/get': undefined,
  'issues/list-for-repo': undefined,
  'issues/get': 'default',
  'issues/list-comments': undefined,
  'issues/list-comments-for-repo': undefined,
  'issues/list-events': undefined,
  'issues/list-events-for-repo': undefined,
  'pulls/list': undefined,
  'pulls/get': undefined,
  'pulls/list-reviews': undefined,
  'pulls/list-review-comments': undefined,
  'pulls/list-review-comments-for-repo': undefined,
  'issues/list-labels-for-repo': undefined,
  'issues/list-milestones': undefined,
  'repos/list-releases': undefined,
  'repos/list-collaborators': undefined,
  'repos/list-branches': undefined,
  'repos/get-branch-protection': undefined,
  'users/get-by-username': 'default-response',
  'rate-limit/get': undefined,
  // Single objects and lists the read API serves beside the lists above (issue 28).
  'repos/get-branch': undefined,
  'repos/list-tags': undefined,
  'repos/list-commits': undefined,
  'repos/get-commit': undefined,
  'repos/compare-commits-with-basehead': undefined,
  'git/list-matching-refs': undefined,
  'git/get-ref': undefined,
  'git/get-commit': undefined,
  'git/get-tree': undefined,
  'git/get-blob': undefined,
  'repos/get-content': undefined,
  'repos/get-readme': undefined,
  'issues/get-milestone': undefined,
  'issues/get-label': undefined,
  'repos/get-latest-release': undefined,
  'repos/get-release': undefined,
  'issues/get-comment': undefined,
  'pulls/get-review-comment': undefined,
  'issues/get-event': undefined,
  'pulls/get-review': undefined,
  'pulls/list-requested-reviewers': undefined,
  'issues/list-events-for-timeline': undefined,
  'issues/list-labels-on-issue': undefined,
  'pulls/list-commits': undefined,
  'pulls/list-files': undefined,
};

const DROP = new Set(['description', 'example', 'examples', 'title', 'externalDocs', 'summary', 'discriminator']);

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '..', 'test', 'fake-github');

function specPath() {
  if (process.argv[2]) return resolve(process.argv[2]);
  const require = createRequire(join(process.cwd(), 'noop.js'));
  return join(dirname(require.resolve('@octokit/openapi/package.json')), 'generated', 'api.github.com.json');
}

function pointer(spec, ref) {
  if (!ref.startsWith('#/')) throw new Error(`external $ref not supported: ${ref}`);
  let node = spec;
  for (const part of ref.slice(2).split('/')) {
    node = node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`dangling $ref ${ref}`);
  }
  return node;
}

/**
 * The example with every `…token` field (`temp_clone_token`) emptied (''): the
 * spec's sample values look like real credentials to secret scanners, and
 * an empty string still matches every schema that has the field.
 */
function withoutTokens(value) {
  if (Array.isArray(value)) return value.map(withoutTokens);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, /token$/i.test(key) && typeof child === 'string' ? '' : withoutTokens(child)]));
}

/** Resolves every $ref (examples are plain data; refs only appear as whole objects). */
function deref(spec, node) {
  if (Array.isArray(node)) return node.map((item) => deref(spec, item));
  if (node && typeof node === 'object') {
    if (typeof node.$ref === 'string') return deref(spec, pointer(spec, node.$ref));
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(spec, v)]));
  }
  return node;
}

/** Copies a schema without documentation keywords, collecting referenced component names. */
function trimSchema(node, refs, inProperties = false) {
  if (Array.isArray(node)) return node.map((item) => trimSchema(item, refs));
  if (!node || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    // Inside `properties`, keys are property names, not keywords: keep them all.
    if (!inProperties && (DROP.has(key) || key.startsWith('x-'))) continue;
    if (!inProperties && key === '$ref') {
      const name = value.replace('#/components/schemas/', '');
      refs.add(name);
      out.$ref = value;
      continue;
    }
    out[key] = trimSchema(value, refs, !inProperties && (key === 'properties' || key === 'patternProperties'));
  }
  return out;
}

function main() {
  const path = specPath();
  const spec = JSON.parse(readFileSync(path, 'utf8'));
  const source = `@octokit/openapi ${spec.info?.version ?? ''} (${spec.info?.title ?? 'api.github.com'})`.trim();
  const examples = {};
  const schemas = {};
  const refs = new Set();
  const found = new Set();
  for (const [route, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== 'object' || !(op.operationId in OPERATIONS)) continue;
      found.add(op.operationId);
      let response = op.responses['200'];
      if (response.$ref) response = pointer(spec, response.$ref);
      const media = response.content['application/json'];
      const named = media.examples ?? {};
      const wanted = OPERATIONS[op.operationId] ?? Object.keys(named)[0];
      let example = named[wanted];
      if (!example) throw new Error(`${op.operationId}: no example ${wanted}`);
      example = deref(spec, example);
      while (example && typeof example === 'object' && 'value' in example && !Array.isArray(example)) example = example.value;
      examples[op.operationId] = { method: method.toUpperCase(), path: route, example: withoutTokens(example) };
      schemas[op.operationId] = trimSchema(media.schema, refs);
    }
  }
  const missing = Object.keys(OPERATIONS).filter((id) => !found.has(id));
  if (missing.length > 0) throw new Error(`operations not in the spec: ${missing.join(', ')}`);
  const components = {};
  const queue = [...refs];
  while (queue.length > 0) {
    const name = queue.pop();
    if (name in components) continue;
    const more = new Set();
    components[name] = trimSchema(spec.components.schemas[name], more);
    for (const ref of more) if (!(ref in components)) queue.push(ref);
  }
  const sorted = (object) => Object.fromEntries(Object.keys(object).sort().map((k) => [k, object[k]]));
  const examplesFile = join(outDir, 'openapi-examples.json');
  const schemasFile = join(outDir, 'openapi-schemas.json');
  writeFileSync(examplesFile, `${JSON.stringify({ source, operations: sorted(examples) }, null, 1)}\n`);
  writeFileSync(schemasFile, `${JSON.stringify({ source, operations: sorted(schemas), components: sorted(components) }, null, 1)}\n`);
  process.stdout.write(`wrote ${examplesFile} and ${schemasFile} (${Object.keys(components).length} component schemas) from ${path}\n`);
}

main();
