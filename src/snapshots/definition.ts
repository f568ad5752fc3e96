import type { ModuleDefinition } from '../app/module-definition.js';
import { snapshotCommands } from './commands.js';
import { snapshotSettings } from './settings.js';

/** The snapshots module's settings and CLI commands (snapshot, snapshot list/release, show). */
export const snapshotsDefinition = {
  name: 'snapshots',
  settings: snapshotSettings,
  commands: snapshotCommands,
} satisfies ModuleDefinition;
