// The per-node work queue of the control loop, after the Cilium operator's
// node manager: a node is queued by events and by the periodic resync;
// whenever a worker is free, the eligible node with the highest priority
// (largest deficit) runs. A node never runs twice at once, never more often
// than its minimum interval, and after a failure waits an exponentially
// growing delay (or the server's Retry-After). Time is injected. A node's
// priority is taken when it is queued (every change queues it again), and a
// pick looks only at the queued nodes, so thousands of idle nodes cost nothing.
// A failure that only a change can cure (`waitsForChange`, e.g. a node whose
// VM has no NIC in the pod subnet) is not retried: the node waits for its
// next enqueue (its Node changes, the backend sees a change, the resync).
import { Backoff, DEFAULT_BACKOFF, retryDelay } from '../kube/backoff.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import { systemClock, type ClockTimers } from '../clock/clock.ts';

export interface NodeQueueOptions {
  workers: number;
  /** Minimum time between two runs' starts for the same node, in ms. */
  minIntervalMs: number;
  backoff?: BackoffOptions;
  /** Higher runs first; evaluated when the node is queued. */
  priority: (node: string) => number;
  /** Does the node's work; a rejection schedules a retry with backoff. */
  handler: (node: string) => Promise<void>;
  /** Told about each failure with the delay before the retry (Infinity: waits for a change). */
  onError?: (node: string, error: unknown, retryInMs: number) => void;
  clock?: ClockTimers;
  random?: () => number;
}

interface NodeState {
  dirty: boolean;
  priority: number;
  running: boolean;
  lastStart: number;
  notBefore: number;
  backoff: Backoff;
  removed: boolean;
  /** Queued again at this time, as the handler asked (controller-runtime's RequeueAfter). */
  wakeAt: number;
}

/**
 * A handler's error after which the node is not retried by backoff: nothing
 * but a change (the next enqueue) can make its next run succeed.
 */
export class WaitForChangeError extends Error {
  override readonly name: string = 'WaitForChangeError';
  readonly waitsForChange = true;
}

/** Whether `error` says the node waits for a change (any error with `waitsForChange: true`). */
export function waitsForChange(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { waitsForChange?: unknown }).waitsForChange === true
  );
}

export class NodeQueue {
  private readonly options: NodeQueueOptions;
  private readonly clock: ClockTimers;
  private readonly nodes = new Map<string, NodeState>();
  /** Names of the nodes with `dirty` set, and of those to be queued at their `wakeAt`. */
  private readonly dirty = new Set<string>();
  private readonly delayed = new Set<string>();
  private running = 0;
  private timer: unknown;
  private timerAt = Infinity;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(options: NodeQueueOptions) {
    if (!(options.workers >= 1)) throw new Error('workers must be at least 1');
    this.options = options;
    this.clock = options.clock ?? systemClock;
  }

  private stateOf(node: string): NodeState {
    let state = this.nodes.get(node);
    if (!state) {
      state = {
        dirty: false,
        priority: 0,
        running: false,
        lastStart: -Infinity,
        notBefore: -Infinity,
        backoff: new Backoff(this.options.backoff ?? DEFAULT_BACKOFF, this.options.random),
        removed: false,
        wakeAt: Infinity,
      };
      this.nodes.set(node, state);
    }
    return state;
  }

  /**
   * Queues the node again in `ms` (the earliest ask wins), as
   * controller-runtime's RequeueAfter: a quarantine's end, its next look.
   */
  enqueueAfter(node: string, ms: number): void {
    if (this.stopped) return;
    const state = this.stateOf(node);
    state.wakeAt = Math.min(state.wakeAt, this.clock.now() + ms);
    state.removed = false;
    this.delayed.add(node);
    this.pump();
  }

  /** Marks the node as needing work; runs it as soon as allowed. */
  enqueue(node: string): void {
    if (this.stopped) return;
    const state = this.stateOf(node);
    // Queued already and not running: it waits for a worker or its interval,
    // and the run that frees one (or the timer) picks again.
    const waiting = state.dirty && !state.running && !state.removed;
    this.mark(node, state, true);
    state.priority = this.options.priority(node);
    state.removed = false;
    if (!waiting) this.pump();
  }

  private mark(name: string, state: NodeState, dirty: boolean): void {
    state.dirty = dirty;
    if (dirty) this.dirty.add(name);
    else this.dirty.delete(name);
  }

  /** Forgets the node (its NNC is gone); a run in progress finishes. */
  remove(node: string): void {
    const state = this.nodes.get(node);
    if (!state) return;
    this.dirty.delete(node);
    if (state.running) {
      state.dirty = false;
      state.removed = true;
    } else this.nodes.delete(node);
  }

  /** Nodes waiting for a run (including those waiting out an interval). */
  get pending(): number {
    return this.dirty.size;
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
    this.dirty.clear();
    this.delayed.clear();
    await this.whenIdle();
  }

  /** Idle: nothing queued or running (a run asked for later does not count). */
  private isIdle(): boolean {
    return this.running === 0 && this.pending === 0;
  }

  private pump(): void {
    if (this.stopped) {
      if (this.isIdle()) this.notifyIdle();
      return;
    }
    const now = this.clock.now();
    let nextAt = Infinity;
    for (const name of this.delayed) {
      const s = this.nodes.get(name);
      if (!s) {
        this.delayed.delete(name);
        continue;
      }
      if (s.wakeAt > now) {
        nextAt = Math.min(nextAt, s.wakeAt);
        continue;
      }
      this.delayed.delete(name);
      s.wakeAt = Infinity;
      s.priority = this.options.priority(name);
      this.mark(name, s, true);
    }
    const free = this.options.workers - this.running;
    // The `free` eligible nodes of highest priority (ties by name), in one pass.
    const picked: Array<[string, NodeState]> = [];
    for (const name of free > 0 ? this.dirty : []) {
      const s = this.nodes.get(name)!;
      if (s.running) continue;
      const at = Math.max(s.notBefore, s.lastStart + this.options.minIntervalMs);
      if (at > now) {
        nextAt = Math.min(nextAt, at);
        continue;
      }
      let i = picked.length;
      while (i > 0 && before(name, s, picked[i - 1]!)) i--;
      if (i < free) {
        picked.splice(i, 0, [name, s]);
        if (picked.length > free) picked.pop();
      }
    }
    for (const [name] of picked) this.run(name, now);
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
    this.mark(name, s, false);
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
      } else if (failed && !this.stopped && waitsForChange(error)) {
        // Not re-marked: an enqueue during the run (a change) still runs it.
        s.notBefore = -Infinity;
        this.options.onError?.(name, error, Infinity);
      } else if (failed && !this.stopped) {
        const info = apiErrorInfo(error);
        const delay = retryDelay(s.backoff.next(), info.retryAfterSeconds);
        s.notBefore = this.clock.now() + delay;
        this.mark(name, s, true);
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

/** Whether node `a` runs before `b`: higher priority, then name. */
function before(name: string, s: NodeState, other: [string, NodeState]): boolean {
  const [otherName, o] = other;
  return s.priority > o.priority || (s.priority === o.priority && name < otherName);
}
