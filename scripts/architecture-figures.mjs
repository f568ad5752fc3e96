#!/usr/bin/env node
// Figures of the source tree's shape, for issue 26's before → after (run in any checkout):
//   node scripts/architecture-figures.mjs [root]      (default: the checkout this script is in)
// Prints one JSON object:
//   appLines            lines of TypeScript in src/app/
//   reachThroughs       a module object's members reached that are not its methods (`.replication.sources`,
//                       `.snapshots.cache`, `.importer.registry`) in src/, test/ and bench/, by where they are;
//                       and CLI commands reaching a module through the application (`app.importer.list()`)
//   folderCycles        cycles between top-level folders of src/ (from import statements, type-only included):
//                       the strongly connected groups of more than one folder
//   sqlOutsideStore     SQL statements (Kysely builder calls and sql`` templates) in files not under a store/ folder
//   filesOver400        files in src/ over 400 lines
//   functionsOver80     functions in src/ over 80 lines
//   duplicatePairs      pairs `duplicates --repo src` reports (and how many of them it marks boilerplate)
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));

function filesUnder(dir, pattern) {
  const found = [];
  const walk = (at) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (pattern.test(name)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

const lines = (text) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const srcFiles = filesUnder(join(root, 'src'), /\.ts$/);
const topFolder = (file) => relative(join(root, 'src'), file).split(sep)[0];

// Lines of src/app.
const appLines = srcFiles.filter((file) => topFolder(file) === 'app').reduce((sum, file) => sum + lines(readFileSync(file, 'utf8')), 0);

// Reach-throughs.
const REACH = /\.(replication|importer|feeds|snapshots|cluster|shards)\.[a-zA-Z_]+\b(?!\s*\()/g;
const reachThroughs = {};
for (const area of ['src', 'test', 'bench']) {
  let count = 0;
  for (const file of filesUnder(join(root, area), /\.(ts|mjs)$/)) count += (readFileSync(file, 'utf8').match(REACH) ?? []).length;
  reachThroughs[area] = count;
}
// CLI commands that go through the application to a module (`app.importer.list()`) instead of taking its API.
const COMMAND_REACH = /\bapp\.(replication|importer|feeds|snapshots|shards|kernel|cluster)\./g;
reachThroughs.commandsThroughApp = srcFiles
  .filter((file) => /commands?\.ts$|[\\/]cli[\\/]/.test(file))
  .reduce((sum, file) => sum + (readFileSync(file, 'utf8').match(COMMAND_REACH) ?? []).length, 0);

// Folder cycles: Tarjan over the folder graph.
const edges = new Map();
const sqlOutsideStore = [];
const filesOver400 = [];
const functionsOver80 = [];
const SQL_CALL = /^(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto)$/;
for (const file of srcFiles) {
  const text = readFileSync(file, 'utf8');
  if (lines(text) > 400) filesOver400.push(`${relative(root, file)} (${lines(text)})`);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const from = topFolder(file);
  const inStore = relative(root, file).split(sep).includes('store');
  let statements = 0;
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const target = node.moduleSpecifier.text;
      if (target.startsWith('.')) {
        const to = topFolder(resolve(dirname(file), target));
        if (to !== from && !to.startsWith('..')) (edges.get(from) ?? edges.set(from, new Set()).get(from)).add(to);
      }
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && SQL_CALL.test(node.expression.name.text)) statements++;
    if (ts.isTaggedTemplateExpression(node) && node.tag.getText(source) === 'sql') statements++;
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      if (end - start + 1 > 80) functionsOver80.push(`${relative(root, file)}:${start + 1} (${end - start + 1})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!inStore && statements > 0) sqlOutsideStore.push([relative(root, file), statements]);
}

function stronglyConnected(graph) {
  let index = 0;
  const stack = [];
  const meta = new Map();
  const groups = [];
  const connect = (node) => {
    meta.set(node, { index, low: index, onStack: true });
    index++;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!meta.has(next)) {
        connect(next);
        meta.get(node).low = Math.min(meta.get(node).low, meta.get(next).low);
      } else if (meta.get(next).onStack) meta.get(node).low = Math.min(meta.get(node).low, meta.get(next).index);
    }
    if (meta.get(node).low === meta.get(node).index) {
      const group = [];
      let member;
      do {
        member = stack.pop();
        meta.get(member).onStack = false;
        group.push(member);
      } while (member !== node);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const node of graph.keys()) if (!meta.has(node)) connect(node);
  return groups;
}

let duplicatePairs = null;
try {
  const out = execFileSync('duplicates', ['--repo', join(root, 'src'), '--most', '1', '--seconds', '120'], { encoding: 'utf8', cwd: root });
  // Its first line: "N pairs of places (F files read), … (S by shape alone, B of those marked boilerplate)".
  const [, pairs, , boilerplate] = /^(\d+) pairs.*?\((\d+) by shape alone, (\d+) of those marked boilerplate\)/m.exec(out) ?? [];
  duplicatePairs = pairs === undefined ? out.split('\n')[0] : { pairs: Number(pairs), boilerplate: Number(boilerplate) };
} catch {
  duplicatePairs = 'duplicates not on PATH';
}

sqlOutsideStore.sort((a, b) => b[1] - a[1]);
console.log(
  JSON.stringify(
    {
      root,
      appLines,
      reachThroughs,
      folderCycles: stronglyConnected(edges),
      sqlOutsideStore: { files: sqlOutsideStore.length, statements: sqlOutsideStore.reduce((sum, [, n]) => sum + n, 0), top: sqlOutsideStore.slice(0, 15).map(([file, n]) => `${file} ${n}`) },
      filesOver400,
      functionsOver80: { count: functionsOver80.length, list: functionsOver80 },
      duplicatePairs,
    },
    null,
    2,
  ),
);
