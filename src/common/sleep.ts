// Waiting a while, optionally cut short by an abort signal.

/** Resolves after `ms`; rejects with Error('interrupted') if `signal` aborts first (or already has). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('interrupted'));
    const onAbort = () => {
      clearTimeout(t);
      reject(new Error('interrupted'));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
