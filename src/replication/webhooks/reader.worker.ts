// A webhook reader thread (see readers.ts): reads each delivery it is sent
// (the batches of a worker pool, answered through threads/serve.cjs).
import { workerData } from 'node:worker_threads';
import { serve } from '../../threads/serve.cjs';
import { readDelivery, type DeliveryJob, type ReadSecrets } from './read.js';

const { secrets } = workerData as { secrets: ReadSecrets };

serve((job: DeliveryJob) => readDelivery(job, secrets));
