import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withDeadline } from './harness.mjs';

/**
 * The feed benches' receiver (feeds-receiver.mjs) as a child process, so its work is not counted as
 * forgesync's; resolves once it listens. `quiet`: its stdout dropped.
 */
export async function startFeedsReceiver({ quiet = false } = {}) {
  const child = fork(fileURLToPath(new URL('./feeds-receiver.mjs', import.meta.url)), [], { stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'inherit', 'ipc'] });
  const listeners = new Set();
  child.on('message', (message) => {
    for (const listener of [...listeners]) listener(message);
  });
  const next = (op, predicate = () => true) =>
    new Promise((resolve, reject) => {
      const onExit = (code) => reject(new Error(`the receiver exited (${code}) before answering ${op}`));
      const listener = (message) => {
        if (message.op === op && predicate(message)) {
          listeners.delete(listener);
          child.off('exit', onExit);
          resolve(message);
        }
      };
      listeners.add(listener);
      child.once('exit', onExit);
    });
  const { port } = await withDeadline(next('ready'), 10_000, 'starting the receiver');
  let asks = 0;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}/${path}`,
    async count() {
      const id = ++asks;
      const answer = next('count', (m) => m.id === id);
      child.send({ op: 'count', id });
      return answer;
    },
    async reset() {
      const answer = next('reset');
      child.send({ op: 'reset' });
      await answer;
    },
    async report(on) {
      const answer = next('report');
      child.send({ op: 'report', on });
      await answer;
    },
    onEvent(fn) {
      const listener = (message) => message.op === 'event' && fn(message);
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    },
  };
}
