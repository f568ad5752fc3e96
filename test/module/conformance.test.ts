import { existsSync } from 'node:fs';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MODULES } from '../../src/app/modules.js';
import { SETTINGS } from '../../src/app/config.js';
import type { Forgesync } from '../../src/app/forgesync.js';
import type { ForgesyncServer } from '../../src/server/app.js';
import { AuthFailures } from '../../src/server/auth.js';
import { ServerPaths } from '../../src/util/server-paths.js';
import type { AnyModuleDefinition } from '../../src/module/definition.js';
import { createTestDatabase, openTestForgesync, testConfig, testJobsUrl, type TestDatabase } from '../support/harness.js';

/*
 * What every module's definition must do, checked for each of them on both
 * registry databases and both job transports: its settings are read by the
 * loader, its commands are built without opening anything, it opens with the
 * APIs it needs, registers the job kinds it declares, serves routes under
 * prefixes of its own, starts and stops its background work, and leaves no
 * timer or handle behind once forgesync is closed.
 */

const DEFINITIONS: readonly AnyModuleDefinition[] = MODULES;

/** Handles keeping the event loop alive now, by kind (process.getActiveResourcesInfo). */
function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/**
 * Every timer set from now on, with where it was set: modules unref their
 * timers, which the event loop then no longer lists, so they are watched
 * as they are made. `pending()` lists those neither fired nor cleared.
 */
function watchTimers() {
  const made: { timer: NodeJS.Timeout; stack: string }[] = [];
  const spies = (['setTimeout', 'setInterval'] as const).map((name) => {
    const original = globalThis[name];
    const spy = vi.spyOn(globalThis, name).mockImplementation(((...args: Parameters<typeof setTimeout>) => {
      const timer = (original as typeof setTimeout)(...args);
      made.push({ timer, stack: new Error().stack ?? '' });
      return timer;
    }) as never);
    return spy;
  });
  return {
    pending: () => made.filter(({ timer }) => !(timer as unknown as { _destroyed: boolean })._destroyed).map(({ stack }) => stack.split('\n').slice(2, 5).join(' | ')),
    restore: () => spies.forEach((spy) => spy.mockRestore()),
  };
}

/** The routes `routes` registers on a fresh server, as `METHOD url`. */
async function routesOf(register: (server: ForgesyncServer, context: never) => Promise<void>): Promise<string[]> {
  const server = Fastify().withTypeProvider<ZodTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  const routes: string[] = [];
  server.addHook('onRoute', (route) => void routes.push(`${String(route.method)} ${route.url}`));
  const context = { tokens: { admin: 'a'.repeat(32), read: undefined, failures: new AuthFailures() }, serverPaths: new ServerPaths([]) };
  await register(server as unknown as ForgesyncServer, context as never);
  await server.ready();
  await server.close();
  return routes;
}

describe('every module definition, without opening anything', () => {
  it('declares a unique name, settings the loader reads, and dashboard pages that exist', () => {
    expect(new Set(DEFINITIONS.map((definition) => definition.name)).size).toBe(DEFINITIONS.length);
    for (const definition of DEFINITIONS) {
      expect(definition.name).toMatch(/^[a-z]+$/);
      for (const field of Object.keys(definition.settings)) expect(SETTINGS, `${definition.name}.${field}`).toHaveProperty(field, definition.settings[field]);
      for (const page of definition.dashboardPages ?? []) {
        expect(existsSync(new URL(`../../src/${definition.name}/dashboard/${page}`, import.meta.url)), `${definition.name}/dashboard/${page}`).toBe(true);
      }
    }
  });

  it('builds its commands without opening forgesync, with names no other module uses', () => {
    const names = new Set<string>();
    for (const definition of DEFINITIONS) {
      const withApi = () => {
        throw new Error(`${definition.name}'s commands reached their API while being built`);
      };
      const commands = definition.commands(withApi);
      for (const command of commands) {
        expect(command).toBeInstanceOf(Command);
        expect(names.has(command.name()), `command ${command.name()} defined twice`).toBe(false);
        names.add(command.name());
      }
    }
  });
});

const BACKENDS = [
  { database: 'sqlite', jobs: 'in-process' },
  { database: 'postgres', jobs: 'in-process' },
  { database: 'sqlite', jobs: 'bullmq' },
  { database: 'postgres', jobs: 'bullmq' },
] as const;

describe.each(BACKENDS)('every module on $database with $jobs jobs', ({ database: kind, jobs }) => {
  let database: TestDatabase;
  let app: Forgesync;
  let before: Map<string, number>;
  let timers: ReturnType<typeof watchTimers>;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    before = activeResources();
    timers = watchTimers();
    ({ app } = await openTestForgesync(testConfig(database.url, jobs === 'bullmq' ? { FORGESYNC_JOBS_URL: testJobsUrl(5) } : {})));
  });

  afterAll(async () => {
    timers?.restore();
    await app?.close();
    await database?.drop();
  });

  it('opens every module, each with its API', () => {
    expect(app.modules.map((module) => module.name).sort()).toEqual(DEFINITIONS.map((definition) => definition.name).sort());
    for (const module of app.modules) expect(app[module.name as keyof typeof app], module.name).toBe(module.api);
  });

  it('registers the job kinds each module declares on the transport', async () => {
    for (const module of app.modules) {
      for (const [kind, spec] of Object.entries(module.jobs ?? {})) {
        expect((await app.kernel.jobs.load(kind)).capacity, `${module.name}: ${kind}`).toBe(spec.concurrency);
      }
    }
  });

  it('serves each module’s routes under its own prefixes, none served twice', async () => {
    const seen = new Map<string, string>();
    for (const module of app.modules) {
      if (!module.routes) continue;
      const routes = await routesOf(module.routes.bind(module));
      expect(routes.length, module.name).toBeGreaterThan(0);
      for (const route of routes) {
        expect(route, module.name).toMatch(/^\S+ \/(api|hooks|github|git)\//);
        expect(seen.get(route), `${route} served by ${module.name} and ${seen.get(route)}`).toBeUndefined();
        seen.set(route, module.name);
      }
    }
  });

  it('starts its background work and, once closed, leaves no timer or handle behind', async () => {
    await app.startService();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await app.close();
    // Sockets and timers closing are let go of on the next turns of the event loop.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(timers.pending()).toEqual([]);
    const after = activeResources();
    for (const [kind, count] of after) expect(count, `${kind} left after close`).toBeLessThanOrEqual(before.get(kind) ?? 0);
  });
});
