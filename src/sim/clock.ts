// Time and concurrency for the simulated kubelet and the workload driver:
// an injectable clock (tests run on a virtual one) and a small semaphore.
// Their retry delays and API error decoding are the shared ones of src/kube/.

/** Failures a retry cannot fix; unlike `isPermanent`, 404 is left to the caller. */
export function isPermanentStatus(status: number | undefined): boolean {
  return status === 400 || status === 401 || status === 403 || status === 422;
}

/** Time and waiting, injected: tests run on a virtual clock. */
export interface Clock {
  /** Milliseconds since the epoch (or any fixed origin shared by the run). */
  now(): number;
  /** Resolves after `ms`, or early (without error) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** A counting semaphore: bounded concurrency for fan-out work. */
export class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];
  constructor(size: number) {
    if (!(size >= 1)) throw new RangeError(`concurrency must be at least 1, got ${size}`);
    this.free = Math.floor(size);
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free += 1;
  }
}
