// The garbage collector's work queue: items are looked at a short while
// after they are queued, in batches; an item whose look failed is queued
// again, after a second per attempt and a few times at most (the work
// queue's rate limit), and at once after a conflict.
import type { Logger } from '../../src/log/logger.ts';
import { ApiError } from './errors.ts';

const MAX_RETRIES = 5;

export class GcWorkQueue {
  private readonly delayMs: number;
  private readonly logger: Logger;
  private readonly process: (id: string) => void;
  private readonly items = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(delayMs: number, logger: Logger, process: (id: string) => void) {
    this.delayMs = delayMs;
    this.logger = logger;
    this.process = process;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.items.clear();
  }

  add(id: string): void {
    if (this.stopped) return;
    this.items.add(id);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), this.delayMs);
      this.timer.unref();
    }
  }

  /** Looks at every queued item; what that changes is queued for the next pass. */
  private flush(): void {
    this.timer = undefined;
    const batch = [...this.items];
    this.items.clear();
    for (const id of batch) {
      if (this.stopped) return;
      try {
        this.process(id);
        this.failures.delete(id);
      } catch (err) {
        this.failed(id, err);
      }
    }
  }

  /** A write that failed is tried again after a second, a few times (the work queue's rate limit). */
  private failed(id: string, err: unknown): void {
    if (err instanceof ApiError && err.code === 404) return;
    const n = (this.failures.get(id) ?? 0) + 1;
    this.failures.set(id, n);
    if (err instanceof ApiError && err.code === 409) {
      this.add(id);
      return;
    }
    this.logger.warn('garbage collection failed', {
      item: id,
      attempt: n,
      error: err instanceof Error ? err.message : String(err),
    });
    if (n >= MAX_RETRIES) {
      this.failures.delete(id);
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.add(id);
    }, 1000 * n);
    t.unref();
    this.timers.add(t);
  }
}
