import type { ModuleDefinition } from '../app/module-definition.js';
import { replicationCommands } from './commands.js';
import { replicationSettings } from './settings.js';

/** The replication module's settings and CLI commands (add, remove, sync, resync, status). */
export const replicationDefinition = {
  name: 'replication',
  settings: replicationSettings,
  commands: replicationCommands,
} satisfies ModuleDefinition;
