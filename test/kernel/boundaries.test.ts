import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The kernel runs modules (database, leases, jobs, logger, metrics) and
 * knows nothing of what serves them: no HTTP framework, no CLI, no cluster.
 * Those layers import the kernel, never the other way round.
 */
const KERNEL = join(import.meta.dirname, '../../src/kernel');
const FORBIDDEN = [/^fastify/, /^@fastify\//, /^commander$/, /\/server\//, /\/cluster\//, /\/cli\//, /\/app\//];

describe('the kernel', () => {
  it('imports no HTTP framework, CLI, cluster or application code', () => {
    const offending: string[] = [];
    for (const file of readdirSync(KERNEL).filter((name) => name.endsWith('.ts'))) {
      const text = readFileSync(join(KERNEL, file), 'utf8');
      for (const [, specifier] of text.matchAll(/^\s*(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]/gm)) {
        if (FORBIDDEN.some((pattern) => pattern.test(specifier!))) offending.push(`${file}: ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });
});

/*
 * A module's folder is its own: another module sees only its API
 * (`<module>/api.ts`), and the foundations under every module (the
 * database, leases, jobs, git, …) import no module and no application code.
 */
const SRC = join(import.meta.dirname, '../../src');
const MODULES = ['replication', 'snapshots', 'importer', 'feeds', 'cluster', 'cloning', 'lfs', 'activity'];
const FOUNDATIONS = ['kernel', 'module', 'store', 'leases', 'jobs', 'git', 'egress', 'credentials', 'threads', 'config', 'logging', 'util', 'server'];

/** Every relative import of the .ts files under `folder`, as [importing file, imported path from src/]. */
function importsUnder(folder: string): [string, string][] {
  const found: [string, string][] = [];
  for (const entry of readdirSync(join(SRC, folder), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8');
    for (const [, specifier] of text.matchAll(/^\s*(?:import|export)[^'"]*from\s+['"](\.[^'"]+)['"]/gm)) {
      found.push([file.slice(SRC.length + 1), join(entry.parentPath, specifier!).slice(SRC.length + 1)]);
    }
  }
  return found;
}

describe('modules and foundations', () => {
  it('a module imports another module only through its api.ts', () => {
    const offending: string[] = [];
    for (const module of MODULES) {
      for (const [file, target] of importsUnder(module)) {
        const [folder, ...rest] = target.split('/');
        if (MODULES.includes(folder!) && folder !== module && rest.join('/') !== 'api.js') offending.push(`${file}: ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('the foundations import no module, application or CLI code', () => {
    const offending: string[] = [];
    for (const foundation of FOUNDATIONS) {
      for (const [file, target] of importsUnder(foundation)) {
        if ([...MODULES, 'app', 'cli'].includes(target.split('/')[0]!)) offending.push(`${file}: ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });
});
