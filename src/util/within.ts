/** `promise`'s value, or 'late' if it takes longer than `ms` (the promise itself runs on). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
