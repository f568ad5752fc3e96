import { sqliteBackend } from './backends.js';
import { describeStoreConformance } from './conformance.js';

describeStoreConformance(sqliteBackend);
