import { ATTR } from './attributes.js';
import { activeTraceCarrier, tracingOn, withSpan, type TraceCarrier } from './span.js';

/** What the job spans name: the job, the transport (`in-process`, `bullmq`) and its queue. */
export interface TracedJob {
  kind: string;
  key: string;
  transport: string;
  /** The queue it goes through (`sync`, `sync@shard-a`). */
  queue: string;
  /** The transport's id of the message, where it has one (BullMQ's job id). */
  messageId?: string | undefined;
}

/**
 * A producer span around queuing a job: `enqueue` gets the W3C trace context
 * to store with the job (undefined when tracing is off), so the worker's
 * consumer span (traceJobRun) continues the trace, in whichever process it runs.
 */
export function traceEnqueue(job: TracedJob, enqueue: (trace: TraceCarrier | undefined) => Promise<void>): Promise<void> {
  if (!tracingOn()) return enqueue(undefined);
  return withSpan(`send ${job.queue}`, { ...messaging(job), [ATTR.messagingOperationType]: 'send', [ATTR.messagingOperationName]: 'enqueue' }, () => enqueue(activeTraceCarrier()), { role: 'producer' });
}

/** A consumer span around running a job, the child of the producer span whose context the job carried (`trace`). */
export function traceJobRun<T>(job: TracedJob, trace: TraceCarrier | undefined, run: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return run();
  return withSpan(`process ${job.queue}`, { ...messaging(job), [ATTR.messagingOperationType]: 'process', [ATTR.messagingOperationName]: 'run' }, run, { role: 'consumer', parent: trace });
}

function messaging(job: TracedJob) {
  return { [ATTR.messagingSystem]: job.transport, [ATTR.messagingDestinationName]: job.queue, [ATTR.messagingMessageId]: job.messageId, [ATTR.jobKey]: job.key };
}
