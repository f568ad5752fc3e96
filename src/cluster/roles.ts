/** What a `forgesync serve` process does: serve HTTP, run jobs, run the schedulers. */
export type Role = 'api' | 'worker' | 'scheduler';

export const ROLES: readonly Role[] = ['api', 'worker', 'scheduler'];

/** The roles of a process, each on or off. */
export type Roles = Readonly<Record<Role, boolean>>;

export const ALL_ROLES: Roles = { api: true, worker: true, scheduler: true };

/** `all`, or a comma list of `api`, `worker`, `scheduler` (`FORGESYNC_ROLE`, `serve --role`); throws with what is wrong. */
export function parseRoles(text: string): Roles {
  const names = text
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  if (names.length === 0) throw new Error('must name at least one role: all, or a comma list of api, worker, scheduler');
  const roles: Record<Role, boolean> = { api: false, worker: false, scheduler: false };
  for (const name of names) {
    if (name === 'all') return ALL_ROLES;
    if (!(ROLES as readonly string[]).includes(name)) throw new Error(`unknown role ${JSON.stringify(name)}: the roles are api, worker, scheduler (or all)`);
    roles[name as Role] = true;
  }
  return roles;
}

/** The roles as written: `all`, or the comma list in ROLES order. */
export function rolesText(roles: Roles): string {
  return ROLES.every((role) => roles[role]) ? 'all' : ROLES.filter((role) => roles[role]).join(',');
}

/** A process that does not run every role: its others run elsewhere, on shared backends. */
export function isDistributed(roles: Roles): boolean {
  return !ROLES.every((role) => roles[role]);
}
