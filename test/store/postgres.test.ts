import { postgresBackend } from './backends.js';
import { describeStoreConformance } from './conformance.js';

describeStoreConformance(postgresBackend);
