// A webhook reader thread (see readers.ts): reads each batch of deliveries
// it is sent and answers them in one message.
import { parentPort, workerData } from 'node:worker_threads';
import { readDelivery, type DeliveryJob, type ReadSecrets } from './read.js';

const { secrets } = workerData as { secrets: ReadSecrets };

parentPort!.on('message', (batch: { id: number; job: DeliveryJob }[]) => {
  parentPort!.postMessage(
    batch.map(({ id, job }) => {
      try {
        return { id, intent: readDelivery(job, secrets) };
      } catch (error) {
        return { id, error: (error as Error).message };
      }
    }),
  );
});
