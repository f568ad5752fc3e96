/** Waits until `check` returns a truthy value, polling every `everyMs`; throws naming `what` after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T> | T, timeoutMs = 20_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
