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
