// The pool monitor: the RxJS heart of the node agent. It merges demand,
// subnet exhaustion, the NNC and a tick into one state, and reconciles the
// pool one reconcile at a time, as Azure CNS IPAM v2's monitor loop does:
// compute the target, mark surplus IPs PendingRelease, write the NNC spec.
//
// Shape: input handlers update plain fields synchronously and call
// `trigger()`. `trigger` starts a reconcile unless one is running (then it
// only marks the state dirty, and the finished reconcile runs once more with
// the latest state: inputs coalesce) or a retry is pending (then the retry
// picks up the latest state when its backoff ends). All time goes through the
// injected rxjs scheduler, so a TestScheduler drives ticks, throttling,
// backoff and damping; effects go only through the two ports.
import type { Observable } from 'rxjs';
import {
  asyncScheduler,
  defer,
  from,
  interval,
  of,
  Subject,
  Subscription,
  throttleTime,
  type SchedulerLike,
} from 'rxjs';
import { catchError, concatMap, map } from 'rxjs/operators';
import type { Logger } from '../log/logger.ts';
import { invalidNncReason, type NodeNetworkConfig } from '../nnc/types.ts';
import { dampedTarget, recordTarget, type TargetSample } from '../scaling/damping.ts';
import { applyExhaustion, normaliseScaler, type Scaler } from '../scaling/scaler.ts';
import { calculateTarget } from '../scaling/target.ts';
import {
  backoffDelay,
  normaliseBackoff,
  retryDelay,
  type BackoffOptions,
} from '../kube/backoff.ts';
import {
  SpecWriteError,
  type DesiredSpec,
  type NncSpecWriter,
  type PoolIpStore,
  type SpecWriteResult,
} from './ports.ts';
import {
  currentSpec,
  normaliseIds,
  normaliseRequest,
  observedSpec,
  releaseCount,
  sameSpec,
  staleIds,
  type ObservedSpec,
  type WrittenSpec,
} from './spec.ts';
import type {
  FailureStage,
  LastReconcile,
  MonitorEvent,
  PoolSnapshot,
  ReconcileOutcome,
} from './types.ts';

export const DEFAULT_TICK_MS = 60_000;
export const DEFAULT_DEMAND_THROTTLE_MS = 500;
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
  demandThrottleMs?: number;
  /** Scale-down damping; 0 (default) is exactly the CNS behaviour. */
  releaseDelayMs?: number;
  dryRun?: boolean;
  backoff?: Partial<BackoffOptions>;
  random?: () => number;
}

export interface MonitorInputs {
  demand$: Observable<number>;
  exhausted$: Observable<boolean>;
  nnc$: Observable<NodeNetworkConfig>;
}

/** Raised inside a reconcile to carry the stage that failed. */
class StageError extends Error {
  override readonly name = 'StageError';
  readonly stage: FailureStage;
  override readonly cause: unknown;
  constructor(stage: FailureStage, cause: unknown) {
    super(errorText(cause));
    this.stage = stage;
    this.cause = cause;
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return 'unknown error';
  }
}

function nonNegative(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : fallback;
}

export class PoolMonitor {
  readonly outcomes$: Observable<ReconcileOutcome>;
  readonly events$: Observable<MonitorEvent>;

  private readonly outcomes = new Subject<ReconcileOutcome>();
  private readonly events = new Subject<MonitorEvent>();
  private readonly store: PoolIpStore;
  private readonly writer: NncSpecWriter;
  private readonly log: Logger;
  private readonly scheduler: SchedulerLike;
  private readonly tickMs: number;
  private readonly demandThrottleMs: number;
  private readonly releaseDelayMs: number;
  private readonly dryRun: boolean;
  private readonly backoff: Required<BackoffOptions>;
  private readonly random: () => number;

  // Input state.
  private demand: number | undefined;
  private exhausted: boolean | undefined;
  private scaler: Scaler | undefined;
  private observed: ObservedSpec | undefined;
  private stale: string[] = [];
  private uid: string | undefined;
  // Pool state.
  private request: number | undefined;
  private target: number | undefined;
  private history: TargetSample[] = [];
  private written: WrittenSpec | undefined;
  /** IPs marked by reconciles whose write has not succeeded yet. */
  private unwrittenMarks = 0;
  // Run control.
  private readonly subscriptions = new Subscription();
  private started = false;
  private stopped = false;
  private running = false;
  private dirty = false;
  private inFlight: Subscription | undefined;
  private onIdle: (() => void) | undefined;
  private retryTimer: Subscription | undefined;
  private retryAt: number | undefined;
  private dampTimer: Subscription | undefined;
  private dampAt: number | undefined;
  private failures = 0;
  private reconciles = 0;
  private writes = 0;
  private last: LastReconcile | undefined;

  constructor(options: PoolMonitorOptions) {
    this.store = options.store;
    this.writer = options.writer;
    this.log = options.logger.child({ component: 'monitor' });
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.tickMs = Math.max(1, nonNegative(options.tickMs, DEFAULT_TICK_MS));
    this.demandThrottleMs = nonNegative(options.demandThrottleMs, DEFAULT_DEMAND_THROTTLE_MS);
    this.releaseDelayMs = nonNegative(options.releaseDelayMs, 0);
    this.dryRun = options.dryRun === true;
    this.backoff = normaliseBackoff(options.backoff, WRITE_BACKOFF);
    this.random = options.random ?? Math.random;
    this.outcomes$ = this.outcomes.asObservable();
    this.events$ = this.events.asObservable();
  }

  /** Subscribes to the inputs and the tick. Call once. */
  start(inputs: MonitorInputs): void {
    if (this.started) throw new Error('pool monitor already started');
    this.started = true;
    const demand$ =
      this.demandThrottleMs > 0
        ? inputs.demand$.pipe(
            throttleTime(this.demandThrottleMs, this.scheduler, { leading: true, trailing: true }),
          )
        : inputs.demand$;
    this.subscriptions.add(
      demand$.subscribe({
        next: (d) => this.onDemand(d),
        error: (e: unknown) => this.onInputError('demand', e),
      }),
    );
    this.subscriptions.add(
      inputs.exhausted$.subscribe({
        next: (x) => this.onExhausted(x),
        error: (e: unknown) => this.onInputError('exhausted', e),
      }),
    );
    this.subscriptions.add(
      inputs.nnc$.subscribe({
        next: (n) => this.onNnc(n),
        error: (e: unknown) => this.onInputError('nnc', e),
      }),
    );
    this.subscriptions.add(interval(this.tickMs, this.scheduler).subscribe(() => this.trigger()));
  }

  /** Stops inputs and timers; resolves once an in-flight reconcile has finished. */
  stop(): Promise<void> {
    if (this.stopped) return this.idle();
    this.stopped = true;
    this.subscriptions.unsubscribe();
    this.clearRetry();
    this.clearDamp();
    return this.idle().then(() => {
      this.outcomes.complete();
      this.events.complete();
    });
  }

  snapshot(): PoolSnapshot {
    return {
      ready: this.isReady(),
      dryRun: this.dryRun,
      demand: this.demand,
      exhausted: this.exhausted,
      scaler: this.scaler === undefined ? undefined : { ...this.scaler },
      target: this.target,
      request: this.request,
      retryAt: this.retryAt,
      consecutiveFailures: this.failures,
      reconciles: this.reconciles,
      writes: this.writes,
      lastReconcile: this.last === undefined ? undefined : { ...this.last },
    };
  }

  private idle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.onIdle;
      this.onIdle = () => {
        previous?.();
        resolve();
      };
    });
  }

  // ---- inputs ------------------------------------------------------------

  private onDemand(value: unknown): void {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      this.log.warn('ignoring invalid demand', { value: String(value) });
      this.events.next({ type: 'input-invalid', input: 'demand', value });
      return;
    }
    this.demand = Math.floor(value);
    this.log.info('demand update', { demand: this.demand });
    this.trigger();
  }

  private onExhausted(value: unknown): void {
    if (typeof value !== 'boolean') {
      this.log.warn('ignoring invalid exhaustion state', { value: String(value) });
      this.events.next({ type: 'input-invalid', input: 'exhausted', value });
      return;
    }
    this.exhausted = value;
    this.log.info('exhaustion update', { exhausted: value });
    this.trigger();
  }

  private onNnc(nnc: NodeNetworkConfig): void {
    const reason = invalidNncReason(nnc);
    if (reason !== undefined) {
      this.log.warn('ignoring NodeNetworkConfig', { reason });
      this.events.next({ type: 'nnc-invalid', reason });
      return;
    }
    const { scaler, warnings } = normaliseScaler(nnc.status?.scaler);
    this.scaler = scaler;
    const generation = nnc.metadata?.generation;
    this.observed = {
      spec: observedSpec(nnc),
      ...(typeof generation === 'number' && Number.isFinite(generation) ? { generation } : {}),
    };
    this.stale = staleIds(nnc);
    const first = this.request === undefined;
    const uid = typeof nnc.metadata?.uid === 'string' ? nnc.metadata.uid : undefined;
    const recreated = !first && uid !== undefined && this.uid !== undefined && uid !== this.uid;
    if (uid !== undefined) this.uid = uid;
    if (recreated) {
      // A new object: what we wrote to the old one says nothing about it.
      this.written = undefined;
      this.unwrittenMarks = 0;
      this.log.warn('NodeNetworkConfig recreated', { uid });
    }
    if (first || recreated) this.request = normaliseRequest(nnc.spec?.requestedIPCount);
    const fields = {
      batch: scaler.batch,
      buffer: scaler.buffer,
      max: scaler.max,
      request: this.request,
    };
    if (warnings.length > 0) {
      this.log.warn('scaler update', {
        ...fields,
        warnings: warnings.map((w) => ({ field: w.field, message: w.message })),
      });
      for (const w of warnings) {
        this.events.next({
          type: 'scaler-invalid',
          field: w.field,
          value: w.value,
          message: w.message,
        });
      }
    } else {
      this.log.info('scaler update', fields);
    }
    if (first) this.events.next({ type: 'ready', request: this.request ?? 0 });
    this.trigger();
  }

  private onInputError(input: 'demand' | 'exhausted' | 'nnc', err: unknown): void {
    // The last state stays; the tick keeps reconciling with it.
    this.log.error('input failed', { input, error: errorText(err) });
    this.events.next({ type: 'input-failed', input, error: errorText(err) });
  }

  // ---- run control -------------------------------------------------------

  private isReady(): boolean {
    return this.demand !== undefined && this.exhausted !== undefined && this.scaler !== undefined;
  }

  private effectiveScaler(): Scaler {
    return applyExhaustion(this.scaler as Scaler, this.exhausted === true);
  }

  /** Recomputes the target and feeds the damping history. */
  private refreshTarget(): number {
    const target = calculateTarget(this.demand ?? 0, this.effectiveScaler());
    this.target = target;
    this.history = recordTarget(this.history, this.scheduler.now(), target, this.releaseDelayMs);
    return target;
  }

  private trigger(): void {
    if (!this.started || this.stopped || !this.isReady()) return;
    this.refreshTarget();
    if (this.running) {
      this.dirty = true;
      return;
    }
    if (this.retryTimer !== undefined) return; // the retry will use the latest state
    this.run();
  }

  private run(): void {
    this.running = true;
    this.dirty = false;
    const sub = this.reconcile$().subscribe((outcome) => this.finish(outcome));
    if (this.running) this.inFlight = sub;
  }

  private finish(outcome: ReconcileOutcome): void {
    this.running = false;
    this.inFlight = undefined;
    this.reconciles += 1;
    if (outcome.wrote) this.writes += 1;
    this.last = {
      at: outcome.at,
      outcome: outcome.kind,
      delta: outcome.delta,
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    };
    if (outcome.kind === 'failed') {
      if (!this.stopped) this.scheduleRetry(outcome.retryInMs ?? this.backoff.initialMs);
      this.dirty = false;
    } else {
      this.failures = 0;
    }
    this.outcomes.next(outcome);
    const idle = this.onIdle;
    this.onIdle = undefined;
    idle?.();
    if (this.dirty && !this.stopped) this.trigger();
  }

  private scheduleRetry(delayMs: number): void {
    this.clearRetry();
    this.retryAt = this.scheduler.now() + delayMs;
    this.retryTimer = this.scheduler.schedule(() => {
      this.retryTimer = undefined;
      this.retryAt = undefined;
      this.trigger();
    }, delayMs);
  }

  private clearRetry(): void {
    this.retryTimer?.unsubscribe();
    this.retryTimer = undefined;
    this.retryAt = undefined;
  }

  private scheduleDamp(at: number): void {
    if (this.stopped || this.dampAt === at) return;
    this.clearDamp();
    this.dampAt = at;
    this.dampTimer = this.scheduler.schedule(
      () => {
        this.dampTimer = undefined;
        this.dampAt = undefined;
        this.trigger();
      },
      Math.max(0, at - this.scheduler.now()),
    );
  }

  private clearDamp(): void {
    this.dampTimer?.unsubscribe();
    this.dampTimer = undefined;
    this.dampAt = undefined;
  }

  // ---- one reconcile -----------------------------------------------------

  private reconcile$(): Observable<ReconcileOutcome> {
    return defer(() => {
      const at = this.scheduler.now();
      const demand = this.demand ?? 0;
      const exhausted = this.exhausted === true;
      const scaler = this.effectiveScaler();
      const target = this.refreshTarget();
      const from = this.request ?? 0;
      const damped = dampedTarget(this.history, at, from, this.releaseDelayMs);
      if (damped.recheckAt !== undefined) this.scheduleDamp(damped.recheckAt);
      const applied = damped.target;
      const delta = applied - from;
      this.log.info('calculated new request', {
        demand,
        batch: scaler.batch,
        buffer: scaler.buffer,
        max: scaler.max,
        target,
        ...(applied !== target ? { applied } : {}),
        exhausted,
      });
      const base = { at, demand, exhausted, scaler, target, applied, from, delta };
      let marked = 0;
      let spec: DesiredSpec | undefined;

      return this.marks$(delta, applied).pipe(
        concatMap((count) => {
          if (count === 0 || this.dryRun) return of(0);
          return defer(() => from$(this.store.markPendingRelease(count))).pipe(
            map((ids) => {
              marked = Array.isArray(ids) ? ids.length : count;
              this.unwrittenMarks += marked;
              return marked;
            }),
            catchError((err: unknown) => {
              this.events.next({ type: 'mark-failed', count, error: errorText(err) });
              throw new StageError('mark', err);
            }),
          );
        }),
        concatMap(() =>
          defer(() => from$(this.store.pendingReleaseIds())).pipe(
            catchError((err: unknown) => {
              throw new StageError('read', err);
            }),
          ),
        ),
        concatMap((ids): Observable<ReconcileOutcome> => {
          const stale = new Set(this.stale);
          spec = {
            requestedIPCount: applied,
            ipsNotInUse: normaliseIds(ids).filter((id) => !stale.has(id)),
          };
          const current = currentSpec(this.observed as ObservedSpec, this.written);
          if (delta === 0 && sameSpec(spec, current)) {
            this.log.info('already at target', {
              request: from,
              ...(damped.deferred ? { deferred: target } : {}),
            });
            return of({
              ...base,
              kind: damped.deferred ? 'deferred' : 'at-target',
              to: from,
              marked,
              wrote: false,
            });
          }
          this.log.info('scaling pool', {
            delta,
            ...(delta === 0 ? { reason: 'spec differs' } : {}),
          });
          if (this.dryRun) {
            this.log.info('dry run: not writing', { spec });
            return of({ ...base, kind: 'dry-run', to: from, marked, wrote: false, spec });
          }
          const toWrite = spec;
          return defer(() => from$(this.writer.writeSpec(toWrite))).pipe(
            catchError((err: unknown) => {
              throw new StageError('write', err);
            }),
            map((result): ReconcileOutcome => {
              const generation = generationOf(result);
              this.written = { spec: toWrite, ...(generation !== undefined ? { generation } : {}) };
              this.request = applied;
              this.unwrittenMarks = 0;
              this.log.info('scaled pool', { request: applied });
              return {
                ...base,
                kind: delta === 0 ? 'corrected' : 'scaled',
                to: applied,
                marked,
                wrote: true,
                spec: toWrite,
              };
            }),
          );
        }),
        catchError((err: unknown) => of(this.failed(err, { ...base, marked, spec }))),
      );
    }).pipe(catchError((err: unknown) => of(this.failedEarly(err))));
  }

  /** How many IPs to mark: bounded by the store's active count (decision record 0004). */
  private marks$(delta: number, applied: number): Observable<number> {
    if (delta >= 0) return of(0);
    return defer(() => from$(this.store.activeCount())).pipe(
      catchError((err: unknown) => {
        throw new StageError('read', err);
      }),
      map((active) => releaseCount(delta, applied, this.unwrittenMarks, active)),
    );
  }

  private failed(
    err: unknown,
    partial: Omit<ReconcileOutcome, 'kind' | 'to' | 'wrote'>,
  ): ReconcileOutcome {
    const stage: FailureStage = err instanceof StageError ? err.stage : 'write';
    const cause = err instanceof StageError ? err.cause : err;
    const statusCode = cause instanceof SpecWriteError ? cause.statusCode : undefined;
    const retryAfter = cause instanceof SpecWriteError ? cause.retryAfterSeconds : undefined;
    this.failures += 1;
    const retryInMs = retryDelay(
      backoffDelay(this.failures - 1, this.backoff, this.random),
      retryAfter,
    );
    const error = `${stage === 'mark' ? 'failed to mark IPs PendingRelease' : stage === 'read' ? 'failed to read the IP store' : 'failed to write the NNC spec'}: ${errorText(cause)}`;
    this.log.error('reconcile failed', {
      error,
      stage,
      ...(statusCode !== undefined ? { statusCode } : {}),
      retryInMs,
    });
    if (stage === 'write') {
      this.events.next({
        type: 'write-failed',
        error: errorText(cause),
        ...(statusCode !== undefined ? { statusCode } : {}),
        retryInMs,
      });
    }
    return {
      ...partial,
      kind: 'failed',
      to: partial.from,
      wrote: false,
      error,
      stage,
      ...(statusCode !== undefined ? { statusCode } : {}),
      retryInMs,
    };
  }

  /** A bug or a throwing port before the pipeline was built: still an outcome, still backed off. */
  private failedEarly(err: unknown): ReconcileOutcome {
    const from = this.request ?? 0;
    return this.failed(err, {
      at: this.scheduler.now(),
      demand: this.demand ?? 0,
      exhausted: this.exhausted === true,
      scaler: this.scaler ?? { batch: 1, buffer: 0, max: 250 },
      target: this.target ?? from,
      applied: from,
      from,
      delta: 0,
      marked: 0,
    });
  }
}

/** `from` for a port's promise (or a test's synchronous thenable). */
function from$<T>(value: PromiseLike<T>): Observable<T> {
  return from(value as Promise<T>);
}

function generationOf(result: void | SpecWriteResult): number | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const g = result.generation;
  return typeof g === 'number' && Number.isFinite(g) ? g : undefined;
}
