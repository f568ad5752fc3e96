/**
 * A signal that aborts when `a` or `b` does (with its reason), and a detach
 * to call when done. AbortSignal.any would do, but costs more, and on
 * Node 20 keeps every combined signal registered on a long-lived `b` (a
 * shutdown signal) until it is collected.
 */
export function eitherAborted(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; detach: () => void } {
  if (a.aborted) return { signal: a, detach: () => {} };
  if (b.aborted) return { signal: b, detach: () => {} };
  const controller = new AbortController();
  const onA = () => {
    detach();
    controller.abort(a.reason);
  };
  const onB = () => {
    detach();
    controller.abort(b.reason);
  };
  const detach = () => {
    a.removeEventListener('abort', onA);
    b.removeEventListener('abort', onB);
  };
  a.addEventListener('abort', onA, { once: true });
  b.addEventListener('abort', onB, { once: true });
  return { signal: controller.signal, detach };
}
