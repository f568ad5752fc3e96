import type { ModuleDefinition } from '../app/module-definition.js';
import { importCommands } from './commands.js';
import { importerSettings } from './settings.js';

/** The importer's settings and its CLI command (`forgesync import github|status|list|sync|resume|cancel|export`). */
export const importerDefinition = {
  name: 'importer',
  settings: importerSettings,
  commands: importCommands,
} satisfies ModuleDefinition;
