// The pool monitor: one RxJS pipeline, read top to bottom in start().
//
//   demand$ ────┐
//   exhausted$ ─┤
//   nnc$ ───────┼─ merge ─ scan(reduce) ─ oneAtATime(isDue, reconcile$) ─ outcomes$
//   store, tick ┤  typed    one state      the gate; one reconcile at a     │
//   wake-ups ───┘  inputs   (state.ts)     time, the latest state wins      │
//      ▲                        ▲           (effects through the two ports) │
//      │                        └──── each outcome fed back ────────────────┤
//      └────────── retry, damping recheck, end of the write window ─────────┘
//
// The decision is pure (decide.ts) and so is the state (state.ts); all time
// goes through the injected rxjs scheduler, so a TestScheduler drives ticks,
// the write window, backoff and damping; effects go only through the ports.
import {
  asyncScheduler,
  catchError,
  EMPTY,
  groupBy,
  interval,
  map,
  merge,
  mergeMap,
  of,
  scan,
  share,
  Subject,
  switchMap,
  takeUntil,
  tap,
  timer,
  type Observable,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import { normaliseBackoff, type BackoffOptions } from '../kube/backoff.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import type { AnyPolicy, Observation } from '../scaling/policies/policy.ts';
import { oneAtATime } from './one-at-a-time.ts';
import type { NncSpecWriter, PoolIpStore } from './ports.ts';
import { errorText } from '../log/error-text.ts';
import { reconcile$, type ReconcileContext } from './reconcile.ts';
import { reduce } from './reduce.ts';
import {
  initialState,
  isDue,
  isReady,
  snapshotOf,
  type InputName,
  type MonitorInput,
  type MonitorState,
} from './state.ts';
import { decideTarget } from './decide.ts';
import type { DampingView, MonitorEvent, PoolSnapshot, ReconcileOutcome, WakeUp } from './types.ts';

export const DEFAULT_TICK_MS = 60_000;
/** A request change waits at most this long after the previous write (docs/design/scaling.md: 500 ms). */
export const DEFAULT_WRITE_WINDOW_MS = 500;
/** Failed reconciles retry after 1 s, 2 s, 4 s … up to a minute, ±20 %. */
export const WRITE_BACKOFF: Required<BackoffOptions> = {
  initialMs: 1_000,
  maxMs: 60_000,
  factor: 2,
  jitter: 0.2,
};

export interface PoolMonitorOptions {
  store: PoolIpStore;
  writer: NncSpecWriter;
  logger: Logger;
  scheduler?: SchedulerLike;
  tickMs?: number;
  writeWindowMs?: number;
  /** Scale-down damping by a fixed delay; 0 (default) is exactly the CNS behaviour. */
  releaseDelayMs?: number;
  /** The pool policy; overrides releaseDelayMs. */
  policy?: AnyPolicy;
  /** Observations recorded before this start (restored from the node store). */
  history?: readonly Observation[];
  dryRun?: boolean;
  backoff?: Partial<BackoffOptions>;
  random?: () => number;
}

export interface MonitorInputs {
  demand$: Observable<number>;
  exhausted$: Observable<boolean>;
  nnc$: Observable<NodeNetworkConfig>;
  /** The store changed outside the monitor (e.g. leaked IPs reclaimed): reconcile again. */
  storeChanged$?: Observable<unknown>;
}

function nonNegative(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : fallback;
}

export class PoolMonitor {
  readonly outcomes$: Observable<ReconcileOutcome>;
  readonly events$: Observable<MonitorEvent>;
  /** Each change of demand or target, as the policy observed it (to be recorded in the node store). */
  readonly observations$: Observable<Observation>;

  private readonly outcomes = new Subject<ReconcileOutcome>();
  private readonly events = new Subject<MonitorEvent>();
  private readonly observations = new Subject<Observation>();
  private lastObserved: Observation | undefined;
  /** Outcomes fed back into the state. */
  private readonly feedback = new Subject<MonitorInput>();
  /** Wake-ups the reconciles ask for. */
  private readonly wakes = new Subject<WakeUp>();
  private readonly stopping = new Subject<void>();
  private readonly scheduler: SchedulerLike;
  private readonly tickMs: number;
  private readonly dryRun: boolean;
  private readonly log: Logger;
  private readonly ctx: ReconcileContext;
  private state: MonitorState;
  private keeper: Subscription | undefined;
  private started = false;
  private finished: Promise<void> | undefined;

  constructor(options: PoolMonitorOptions) {
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.tickMs = Math.max(1, nonNegative(options.tickMs, DEFAULT_TICK_MS));
    this.dryRun = options.dryRun === true;
    this.log = options.logger.child({ component: 'monitor' });
    const state = initialState({
      releaseDelayMs: nonNegative(options.releaseDelayMs, 0),
      ...(options.policy ? { policy: options.policy } : {}),
      writeWindowMs: nonNegative(options.writeWindowMs, DEFAULT_WRITE_WINDOW_MS),
    });
    const policy = state.config.policy;
    for (const o of options.history ?? [])
      state.policyMemory = policy.observe(state.policyMemory, o);
    this.state = state;
    this.ctx = {
      store: options.store,
      writer: options.writer,
      log: this.log,
      report: (event) => this.events.next(event),
      now: () => this.scheduler.now(),
      dryRun: this.dryRun,
      backoff: normaliseBackoff(options.backoff, WRITE_BACKOFF),
      random: options.random ?? Math.random,
    };
    this.outcomes$ = this.outcomes.asObservable();
    this.events$ = this.events.asObservable();
    this.observations$ = this.observations.asObservable();
  }

  /** Builds the pipeline and subscribes to the inputs. Call once. */
  start(inputs: MonitorInputs): void {
    if (this.started) throw new Error('pool monitor already started');
    this.started = true;
    if (this.finished !== undefined) return; // stopped before it started

    const now = (): number => this.scheduler.now();
    const input = <V>(name: InputName, source$: Observable<V>, typed: (v: V) => MonitorInput) =>
      source$.pipe(
        map(typed),
        catchError((err: unknown) =>
          of<MonitorInput>({ type: 'input-failed', at: now(), input: name, error: errorText(err) }),
        ),
      );

    // 1. Typed inputs: the wake-ups reconciles asked for, the tick, the watches
    // (subscribed in this order, so inputs that emit at once find the rest ready).
    const wakeUps$ = this.wakes.pipe(
      groupBy((wake) => wake.reason),
      mergeMap((same) =>
        same.pipe(
          switchMap((wake) =>
            timer(Math.max(0, wake.at - now()), this.scheduler).pipe(
              map((): MonitorInput => ({ type: 'wake', at: now(), reason: wake.reason })),
            ),
          ),
        ),
      ),
    );
    const outside$ = merge(
      wakeUps$,
      interval(this.tickMs, this.scheduler).pipe(
        map((): MonitorInput => ({ type: 'tick', at: now() })),
      ),
      input('demand', inputs.demand$, (value) => ({ type: 'demand', at: now(), value })),
      input('exhausted', inputs.exhausted$, (value) => ({ type: 'exhausted', at: now(), value })),
      input('nnc', inputs.nnc$, (nnc) => ({ type: 'nnc', at: now(), nnc })),
      (inputs.storeChanged$ ?? EMPTY).pipe(map((): MonitorInput => ({ type: 'store', at: now() }))),
    ).pipe(takeUntil(this.stopping));

    // 2. One state: every input, and every outcome fed back, through the pure reducer.
    // (feedback first: inputs that emit at subscription already produce outcomes)
    const state$ = merge(this.feedback, outside$).pipe(
      scan(reduce, this.state),
      tap((s) => this.publish(s)),
      share(),
    );

    // 3-5. The gate and one reconcile at a time (latest state wins); effects
    // through the ports; each outcome fed back before it is published.
    const outcomes$ = state$.pipe(
      takeUntil(this.stopping),
      oneAtATime(isDue, (s) => reconcile$(s, this.ctx).pipe(tap((o) => this.feedBack(o, s)))),
    );

    let done: () => void = () => {};
    this.finished = new Promise<void>((resolve) => (done = resolve));
    outcomes$.subscribe({
      next: (o) => this.outcomes.next(o),
      complete: () => {
        this.close();
        done();
      },
    });
    // Keeps the state alive after stop, so the reconcile in flight still lands in it.
    this.keeper = state$.subscribe();
  }

  /** Stops inputs and timers; resolves once an in-flight reconcile has finished. */
  stop(): Promise<void> {
    if (this.finished === undefined) {
      this.finished = Promise.resolve();
      this.close();
    }
    this.stopping.next();
    this.stopping.complete();
    return this.finished;
  }

  snapshot(): PoolSnapshot {
    return snapshotOf(this.state, this.dryRun);
  }

  /** The policy's view of the current state (undefined until ready): why the pool is held where it is. */
  damping(): DampingView | undefined {
    if (!isReady(this.state)) return undefined;
    const now = this.scheduler.now();
    const t = decideTarget(this.state, now);
    const policy = this.state.config.policy;
    return {
      policy: policy.name,
      target: t.target,
      applied: t.applied,
      request: t.from,
      heldBack: Math.max(0, t.applied - t.target),
      deferred: t.deferred,
      ...(t.recheckAt !== undefined ? { recheckAt: t.recheckAt } : {}),
      ...(t.why !== undefined ? { why: t.why } : {}),
      ...(policy.account ? { account: policy.account(this.state.policyMemory, now) } : {}),
    };
  }

  private publish(s: MonitorState): void {
    this.state = s;
    const o = s.observation;
    const last = this.lastObserved;
    if (
      o !== undefined &&
      (last === undefined || o.demand !== last.demand || o.target !== last.target)
    ) {
      this.lastObserved = o;
      this.observations.next(o);
    }
    for (const n of s.notices) {
      if (n.msg !== undefined) this.log[n.level](n.msg, n.fields ?? {});
      if (n.event !== undefined) this.events.next(n.event);
    }
  }

  private feedBack(outcome: ReconcileOutcome, ran: MonitorState): void {
    this.feedback.next({
      type: 'reconciled',
      at: this.scheduler.now(),
      outcome,
      ran: { wanted: ran.wanted, uid: ran.nnc?.uid },
    });
    if (outcome.wake !== undefined) this.wakes.next(outcome.wake);
  }

  private close(): void {
    this.keeper?.unsubscribe();
    this.feedback.complete();
    this.wakes.complete();
    this.outcomes.complete();
    this.events.complete();
    this.observations.complete();
  }
}
