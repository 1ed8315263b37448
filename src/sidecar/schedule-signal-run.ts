// The schedule signal's loop: looks at the pool when told something changed
// (a reconcile, an address handed out or given back) and every few seconds,
// decides purely (schedule-signal.ts) and puts the decision on the Node
// (schedule-signal-node.ts), one step at a time: what arrives meanwhile is
// looked at once the step is done, the latest state winning. A failed Node
// write is retried with exponential backoff and jitter (429: Retry-After),
// never in a hot loop. One injected clock for every timer and time.
import { unrefSystemClock, type Clock, type TimerHandle } from '../clock/clock.ts';
import { backoffDelay, DEFAULT_BACKOFF, retryDelay, type BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeTaints } from './schedule-signal-node.ts';
import {
  afterChange,
  afterRead,
  decideSignal,
  HOLD_MS,
  initialSignalState,
  TAINT_KEY,
  withReason,
  type Capacity,
  type SignalChange,
  type SignalState,
  type Want,
} from './schedule-signal.ts';

/** What the pool looks like now, for the signal. */
export interface SignalObservation {
  want: Want;
  capacity?: Capacity;
}

export interface ScheduleSignalOptions {
  node: NodeTaints;
  observe(): SignalObservation;
  logger: Logger;
  /** Time and timers (tests run on a virtual clock); by default timers that do not hold the process open. */
  clock?: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /** Least time between two capacity changes (default HOLD_MS). */
  holdMs?: number;
  /** How often the pool is looked at without being told (default 5 s). */
  checkMs?: number;
  /** A poke is looked at after this (default 100 ms): a burst of them is one look. */
  settleMs?: number;
  backoff?: BackoffOptions;
  random?: () => number;
  /** Told after each change is on the Node (metrics, Events). */
  onChange?(change: SignalChange): void;
  /** Told after each look (metrics). */
  onLook?(state: SignalState, observation: SignalObservation): void;
  /** Look and keep the history only, never decide or touch the Node (--schedule-signal false). */
  observeOnly?: boolean;
}

/** /debug/pool's `scheduleSignal`. */
export interface ScheduleSignalStatus {
  enabled: true;
  taint: string;
  /** Our taint is on the Node (null: not read yet). */
  tainted: boolean | null;
  reason: string | null;
  /** What the pool calls for now: taint, clear or unknown, and why. */
  wants: string | null;
  why: string | null;
  capacity: Capacity | null;
  /** A capacity change held back by the hysteresis until then. */
  heldUntil: string | null;
  changes: number;
  lastChange: { at: string; to: string; reason: string; why: string } | null;
  retryAt: string | null;
  lastError: string | null;
}

/** A change of whether the node could serve another pod, and whether pods waited there (for the embedded report). */
export interface ServableMark {
  at: number;
  canServe: boolean;
  /** Pods bound to the node waited for an address. */
  waiting: boolean;
}

const HISTORY = 500;

export class ScheduleSignalLoop {
  private state: SignalState = initialSignalState();
  private readonly o: ScheduleSignalOptions;
  private readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  private readonly holdMs: number;
  private last: SignalObservation | undefined;
  private heldUntil: number | undefined;
  private retryAt: number | undefined;
  private lastError: string | undefined;
  private failures = 0;
  private busy: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly ticks = new Set<TimerHandle>();
  private pokeTimer: TimerHandle | undefined;
  private wakeTimer: { at: number; timer: TimerHandle } | undefined;
  private readonly marks: ServableMark[] = [];

  /** Whether it puts the signal on the Node (false: it only looks). */
  get enabled(): boolean {
    return this.o.observeOnly !== true;
  }

  constructor(options: ScheduleSignalOptions) {
    this.o = options;
    this.clock = options.clock ?? unrefSystemClock;
    this.holdMs = options.holdMs ?? HOLD_MS;
  }

  start(): void {
    const every = this.o.checkMs ?? 5000;
    const tick = (): void => {
      if (this.stopped) return;
      this.look();
      const timer = this.clock.setTimeout(() => {
        this.ticks.delete(timer);
        tick();
      }, every);
      this.ticks.add(timer);
    };
    tick();
  }

  /** Something changed: look soon (pokes within settleMs are one look). */
  poke(): void {
    if (this.stopped || this.pokeTimer !== undefined) return;
    this.pokeTimer = this.clock.setTimeout(() => {
      this.pokeTimer = undefined;
      this.look();
    }, this.o.settleMs ?? 100);
  }

  /** Stops looking; a write in flight finishes. The taint stays as it is. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.pokeTimer);
    this.clock.clearTimeout(this.wakeTimer?.timer);
    for (const t of this.ticks) this.clock.clearTimeout(t);
    await this.busy;
  }

  /** When the node could and could not serve another pod, the latest 500 changes. */
  history(): readonly ServableMark[] {
    return this.marks;
  }

  status(): ScheduleSignalStatus {
    const iso = (t: number | undefined): string | null =>
      t === undefined ? null : new Date(t).toISOString();
    const s = this.state;
    const c = s.lastChange;
    return {
      enabled: true,
      taint: TAINT_KEY,
      tainted: s.tainted ?? null,
      reason: s.tainted ? (s.reason ?? null) : null,
      wants: this.last?.want.kind ?? null,
      why: this.last?.want.why ?? null,
      capacity: this.last?.capacity ?? null,
      heldUntil: iso(this.heldUntil),
      changes: s.changes,
      lastChange: c
        ? { at: new Date(c.at).toISOString(), to: c.to, reason: c.reason, why: c.why }
        : null,
      retryAt: iso(this.retryAt),
      lastError: this.lastError ?? null,
    };
  }

  /** One step at a time; a look asked for meanwhile runs once after it. */
  private look(): void {
    if (this.stopped) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = this.step().finally(() => {
      this.busy = undefined;
      if (this.again) {
        this.again = false;
        this.look();
      }
    });
  }

  private async step(): Promise<void> {
    const now = this.clock.now();
    if (this.retryAt !== undefined && now < this.retryAt) return;
    const observation = this.o.observe();
    this.last = observation;
    this.mark(now, observation);
    if (this.o.observeOnly) return;
    this.state = withReason(this.state, observation.want);
    const step = decideSignal(this.state, observation.want, now, this.holdMs);
    this.heldUntil = step.kind === 'hold' ? step.until : undefined;
    try {
      if (step.kind === 'read') {
        this.state = afterRead(this.state, await this.o.node.read());
        this.succeeded();
        this.again = true; // decide on what was read
      } else if (step.kind === 'hold') {
        this.wakeAt(step.until);
      } else if (step.kind === 'change') {
        const reason = step.change.to === 'tainted' ? this.reasonOf(step.change) : undefined;
        await this.o.node.write(reason);
        this.state = afterChange(this.state, step);
        this.succeeded();
        const c = step.change;
        this.o.logger.info(
          c.to === 'tainted' ? 'node stops attracting pods' : 'node attracts pods again',
          { taint: TAINT_KEY, reason: c.reason, why: c.why, changes: this.state.changes },
        );
        this.o.onChange?.(c);
      }
    } catch (err) {
      this.failed(err, step.kind);
    }
    this.o.onLook?.(this.state, observation);
  }

  private reasonOf(change: SignalChange) {
    return change.reason as Exclude<SignalChange['reason'], 'ready' | 'can-serve'>;
  }

  private succeeded(): void {
    this.failures = 0;
    this.retryAt = undefined;
    this.lastError = undefined;
  }

  private failed(err: unknown, what: string): void {
    const info = apiErrorInfo(err);
    const delay = retryDelay(
      backoffDelay(this.failures, this.o.backoff ?? DEFAULT_BACKOFF, this.o.random),
      info.retryAfterSeconds,
    );
    this.failures += 1;
    this.lastError = info.message;
    this.retryAt = this.clock.now() + delay;
    this.o.logger.warn('schedule signal: node write failed', {
      step: what === 'read' ? 'read' : 'write',
      error: info.message,
      ...(info.statusCode !== undefined ? { statusCode: info.statusCode } : {}),
      retryInMs: delay,
      failures: this.failures,
    });
    this.wakeAt(this.retryAt);
  }

  /** Look again at `at` (the earliest wake wins). */
  private wakeAt(at: number): void {
    if (this.stopped) return;
    if (this.wakeTimer && this.wakeTimer.at <= at) return;
    this.clock.clearTimeout(this.wakeTimer?.timer);
    const timer = this.clock.setTimeout(() => {
      this.wakeTimer = undefined;
      this.look();
    }, at - this.clock.now());
    this.wakeTimer = { at, timer };
  }

  private mark(at: number, o: SignalObservation): void {
    const canServe = o.want.kind === 'clear';
    const waiting = (o.capacity?.waiting ?? 0) > 0;
    const prev = this.marks[this.marks.length - 1];
    if (prev?.canServe === canServe && prev.waiting === waiting) return;
    this.marks.push({ at, canServe, waiting });
    if (this.marks.length > HISTORY) this.marks.splice(0, this.marks.length - HISTORY);
  }
}
