import type { Command } from 'commander';
import type { SettingGroup } from '../config/setting.js';

/**
 * What a module declares before anything is opened: its settings (read by
 * the configuration loader, listed in the README) and its CLI commands
 * (which open forgesync when they run, see cli/app-context.ts).
 */
export interface ModuleDefinition {
  readonly name: string;
  readonly settings: SettingGroup;
  commands(): Command[];
}
