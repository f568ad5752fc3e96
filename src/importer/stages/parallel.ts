/** Runs `work` for every item, at most `limit` at once; the first failure is thrown once all have settled. */
export async function inParallel<T>(limit: number, items: readonly T[], work: (item: T) => Promise<unknown>): Promise<void> {
  let index = 0;
  let failure: unknown;
  const worker = async () => {
    while (index < items.length && failure === undefined) {
      const item = items[index++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure !== undefined) throw failure;
}
