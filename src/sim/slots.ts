// Concurrency and failure classes for the simulated kubelet and the workload
// driver: a small semaphore, and which API statuses no retry can fix. Their
// clock is the product's (src/clock/); their retry delays and API error
// decoding are the shared ones of src/kube/.

/** Failures a retry cannot fix; unlike `isPermanent`, 404 is left to the caller. */
export function isPermanentStatus(status: number | undefined): boolean {
  return status === 400 || status === 401 || status === 403 || status === 422;
}

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
