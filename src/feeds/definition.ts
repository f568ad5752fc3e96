import type { ModuleDefinition } from '../app/module-definition.js';
import { feedCommands } from './commands.js';
import { feedSettings } from './settings.js';

/** The feeds' settings and their CLI command (`forgesync feed …`). */
export const feedsDefinition = {
  name: 'feeds',
  settings: feedSettings,
  commands: feedCommands,
} satisfies ModuleDefinition;
