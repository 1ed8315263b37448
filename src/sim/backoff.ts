// Retry delays for the simulated kubelet and the workload driver: exponential
// backoff with ±jitter, randomness injected for deterministic tests, plus the
// HTTP status of a failed Kubernetes client call (client-node 2.x throws
// ApiException {code}; watches throw {statusCode}).

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  /** Growth per attempt; default 2. */
  factor?: number;
  /** ± fraction of the delay that is random; default 0.2. */
  jitter?: number;
}

/** Delay before retry `attempt` (0-based): min(max, initial × factor^attempt) ± jitter. */
export function retryDelayMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const base = Math.min(
    policy.maxMs,
    policy.initialMs * (policy.factor ?? 2) ** Math.max(0, attempt),
  );
  const spread = base * (policy.jitter ?? 0.2) * (random() * 2 - 1);
  return Math.round(Math.min(policy.maxMs, Math.max(0, base + spread)));
}

/** The HTTP status of a failed API call, when the server answered. */
export function httpStatusOf(err: unknown): number | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number' && e.code >= 100 && e.code < 600) return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** Failures a retry cannot fix. */
export function isPermanentStatus(status: number | undefined): boolean {
  return status === 400 || status === 401 || status === 403 || status === 422;
}

export function errorMessage(err: unknown): string {
  const status = httpStatusOf(err);
  const text = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  return status !== undefined && !text.includes(String(status)) ? `HTTP ${status}: ${text}` : text;
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
