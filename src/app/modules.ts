import { activityDefinition } from '../activity/definition.js';
import { cloningDefinition } from '../cloning/definition.js';
import { clusterDefinition } from '../cluster/definition.js';
import { feedsDefinition } from '../feeds/definition.js';
import { importerDefinition } from '../importer/definition.js';
import { lfsDefinition } from '../lfs/definition.js';
import { replicationDefinition } from '../replication/definition.js';
import { snapshotsDefinition } from '../snapshots/definition.js';

/**
 * The capability modules, in the order their settings and commands are
 * listed (the README's settings table, `forgesync --help`). A new module
 * adds its definition here and its opening to compose.ts.
 */
export const MODULES = [replicationDefinition, snapshotsDefinition, importerDefinition, feedsDefinition, lfsDefinition, cloningDefinition, clusterDefinition, activityDefinition] as const;
