import { describe, expect, it } from 'vitest';
import { SharedBackendsRequiredError } from '../../src/cluster/errors.js';
import { requireSharedBackends } from '../../src/cluster/preflight.js';
import { ALL_ROLES, parseRoles, rolesText } from '../../src/cluster/roles.js';

describe('roles', () => {
  it('reads all, and comma lists in any order and case', () => {
    expect(parseRoles('all')).toEqual(ALL_ROLES);
    expect(parseRoles(' Worker , api ')).toEqual({ api: true, worker: true, scheduler: false });
    expect(rolesText(parseRoles('scheduler,api'))).toBe('api,scheduler');
    expect(rolesText(parseRoles('api,worker,scheduler'))).toBe('all');
  });

  it('names an unknown role and an empty list', () => {
    expect(() => parseRoles('api,workers')).toThrow('unknown role "workers": the roles are api, worker, scheduler (or all)');
    expect(() => parseRoles(' , ')).toThrow(/at least one role/);
  });

  it('refuses a distributed role on the embedded backends, saying what to set', () => {
    const embedded = { databaseUrl: 'sqlite:/tmp/x/forgesync.db', leaseUrl: 'sqlite:/tmp/x/forgesync.db', jobsUrl: undefined };
    expect(() => requireSharedBackends(ALL_ROLES, embedded)).not.toThrow();
    let error: unknown;
    try {
      requireSharedBackends(parseRoles('worker'), embedded);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SharedBackendsRequiredError);
    const message = (error as Error).message;
    expect(message).toMatch(/^--role worker runs part of forgesync/);
    expect(message).toContain('FORGESYNC_DATABASE_URL=postgres://');
    expect(message).toContain('FORGESYNC_LEASE_URL=redis://');
    expect(message).toContain('FORGESYNC_JOBS_URL=redis://');
    // Only what is missing is named.
    expect(() => requireSharedBackends(parseRoles('api'), { databaseUrl: 'postgres://db/x', leaseUrl: 'redis://r:6379', jobsUrl: undefined })).toThrow(/^(?!.*DATABASE_URL)(?!.*LEASE_URL).*FORGESYNC_JOBS_URL/);
    const shared = { databaseUrl: 'postgres://db/x', leaseUrl: 'redis://r:6379', jobsUrl: 'redis://r:6379' };
    expect(() => requireSharedBackends(parseRoles('api,scheduler'), { ...shared, clusterToken: 'x'.repeat(16) })).not.toThrow();
    // api and worker processes reach each other with the cluster token; a scheduler alone needs none.
    expect(() => requireSharedBackends(parseRoles('worker'), shared)).toThrow(/^(?!.*DATABASE_URL)(?!.*JOBS_URL).*set FORGESYNC_CLUSTER_TOKEN/);
    expect(() => requireSharedBackends(parseRoles('scheduler'), shared)).not.toThrow();
  });
});
