import type { ModuleDefinition } from './module-definition.js';
import { replicationDefinition } from '../replication/definition.js';
import { snapshotsDefinition } from '../snapshots/definition.js';
import { importerDefinition } from '../importer/definition.js';
import { feedsDefinition } from '../feeds/definition.js';
import { clusterDefinition } from '../cluster/definition.js';

/**
 * The capability modules, in the order they are opened (see Forgesync.open,
 * which wires each from what it needs) and their commands listed. A new
 * module adds its definition here, its settings to app/config.ts and its
 * wiring to app/forgesync.ts; no other module's files change.
 */
export const MODULES: readonly ModuleDefinition[] = [replicationDefinition, snapshotsDefinition, importerDefinition, feedsDefinition, clusterDefinition];
