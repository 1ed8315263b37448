// The per-node work queue of the control loop, after the Cilium operator's
// node manager: a node is queued by events and by the periodic resync;
// whenever a worker is free, the eligible node with the highest priority
// (largest deficit) runs. A node never runs twice at once, never more often
// than its minimum interval, and after a failure waits an exponentially
// growing delay (or the server's Retry-After). Time is injected.
import { Backoff, DEFAULT_BACKOFF, retryDelay } from '../kube/backoff.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';

export interface QueueClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: QueueClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface NodeQueueOptions {
  workers: number;
  /** Minimum time between two runs' starts for the same node, in ms. */
  minIntervalMs: number;
  backoff?: BackoffOptions;
  /** Higher runs first; evaluated when workers pick. */
  priority: (node: string) => number;
  /** Does the node's work; a rejection schedules a retry with backoff. */
  handler: (node: string) => Promise<void>;
  /** Told about each failure with the delay before the retry. */
  onError?: (node: string, error: unknown, retryInMs: number) => void;
  clock?: QueueClock;
  random?: () => number;
}

interface NodeState {
  dirty: boolean;
  running: boolean;
  lastStart: number;
  notBefore: number;
  backoff: Backoff;
  removed: boolean;
}

export class NodeQueue {
  private readonly options: NodeQueueOptions;
  private readonly clock: QueueClock;
  private readonly nodes = new Map<string, NodeState>();
  private running = 0;
  private timer: unknown;
  private timerAt = Infinity;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(options: NodeQueueOptions) {
    if (!(options.workers >= 1)) throw new Error('workers must be at least 1');
    this.options = options;
    this.clock = options.clock ?? realClock;
  }

  /** Marks the node as needing work; runs it as soon as allowed. */
  enqueue(node: string): void {
    if (this.stopped) return;
    let state = this.nodes.get(node);
    if (!state) {
      state = {
        dirty: false,
        running: false,
        lastStart: -Infinity,
        notBefore: -Infinity,
        backoff: new Backoff(this.options.backoff ?? DEFAULT_BACKOFF, this.options.random),
        removed: false,
      };
      this.nodes.set(node, state);
    }
    state.dirty = true;
    state.removed = false;
    this.pump();
  }

  /** Forgets the node (its NNC is gone); a run in progress finishes. */
  remove(node: string): void {
    const state = this.nodes.get(node);
    if (!state) return;
    if (state.running) {
      state.dirty = false;
      state.removed = true;
    } else this.nodes.delete(node);
  }

  /** Nodes waiting for a run (including those waiting out an interval). */
  get pending(): number {
    let n = 0;
    for (const s of this.nodes.values()) if (s.dirty) n++;
    return n;
  }

  get active(): number {
    return this.running;
  }

  /** Resolves when no node is queued or running (waiting retries count as queued). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops taking work and waits for the runs in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    for (const s of this.nodes.values()) s.dirty = false;
    await this.whenIdle();
  }

  private isIdle(): boolean {
    return this.running === 0 && this.pending === 0;
  }

  private pump(): void {
    if (this.stopped) {
      if (this.isIdle()) this.notifyIdle();
      return;
    }
    const now = this.clock.now();
    const eligible: string[] = [];
    let nextAt = Infinity;
    for (const [name, s] of this.nodes) {
      if (!s.dirty || s.running) continue;
      const at = Math.max(s.notBefore, s.lastStart + this.options.minIntervalMs);
      if (at <= now) eligible.push(name);
      else nextAt = Math.min(nextAt, at);
    }
    const free = this.options.workers - this.running;
    if (eligible.length > free) {
      const prio = new Map(eligible.map((n) => [n, this.options.priority(n)]));
      eligible.sort((a, b) => prio.get(b)! - prio.get(a)! || (a < b ? -1 : a > b ? 1 : 0));
    }
    for (const name of eligible.slice(0, Math.max(0, free))) this.run(name, now);
    if (nextAt < Infinity) this.arm(nextAt, now);
    if (this.isIdle()) this.notifyIdle();
  }

  private arm(at: number, now: number): void {
    if (this.timer !== undefined && this.timerAt <= at) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.pump();
      },
      Math.max(0, at - now),
    );
  }

  private run(name: string, now: number): void {
    const s = this.nodes.get(name)!;
    s.dirty = false;
    s.running = true;
    s.lastStart = now;
    this.running++;
    const done = (error: unknown, failed: boolean): void => {
      s.running = false;
      this.running--;
      if (s.removed) {
        // Re-queued after removal means a new NNC of that name: keep it.
        if (!s.dirty) this.nodes.delete(name);
        s.removed = false;
      } else if (failed && !this.stopped) {
        const info = apiErrorInfo(error);
        const delay = retryDelay(s.backoff.next(), info.retryAfterSeconds);
        s.notBefore = this.clock.now() + delay;
        s.dirty = true;
        this.options.onError?.(name, error, delay);
      } else if (!failed) {
        s.backoff.reset();
        s.notBefore = -Infinity;
      }
      this.pump();
    };
    let promise: Promise<void>;
    try {
      promise = this.options.handler(name);
    } catch (err) {
      promise = Promise.reject(err);
    }
    promise.then(
      () => done(undefined, false),
      (err: unknown) => done(err, true),
    );
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
