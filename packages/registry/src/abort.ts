import { abortErrorOf } from './http-transport.js';

/** Settles with `promise`, or rejects as soon as `signal` aborts (the promise itself is left to finish). */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortErrorOf(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortErrorOf(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
