// Types of serve.cjs, for thread scripts written in TypeScript (the webhook readers).
import type { TransferListItem } from 'node:worker_threads';

/**
 * Answers the pool's requests on this thread: `handle` turns each request
 * into its answer (pushing onto `transfer` the answer's buffers to move
 * rather than copy) or throws; `onClose` runs when the pool drains on close.
 */
export declare function serve<Q, A>(handle: (request: Q, transfer: TransferListItem[]) => A, onClose?: () => void): void;
