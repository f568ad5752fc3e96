import type { ModuleDefinition } from '../kernel/module.js';
import { feedCommands } from './commands.js';
import { feedSettings } from './settings.js';

/** The feeds' settings and their CLI command (`forgesync feed …`). */
export const feedsDefinition = {
  name: 'feeds',
  settings: feedSettings,
  commands: feedCommands,
} satisfies ModuleDefinition;
