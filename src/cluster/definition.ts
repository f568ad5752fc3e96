import type { ModuleDefinition } from '../app/module-definition.js';
import { clusterCommands } from './commands.js';
import { clusterSettings } from './settings.js';

/** Distributed mode's settings (roles, shard, cluster token) and its command (`forgesync shard …`). */
export const clusterDefinition = {
  name: 'cluster',
  settings: clusterSettings,
  commands: clusterCommands,
} satisfies ModuleDefinition;
