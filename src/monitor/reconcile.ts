// One reconcile's effects, through the monitor's two ports: read the store,
// decide (pure, decide.ts), mark IPs PendingRelease, write the NNC spec, and
// turn what happened into one outcome, failures included (each with its
// stage and the retry's backoff). It never throws and never changes the
// monitor's state: the outcome is fed back into the reducer.
import { defer, from, of, type Observable } from 'rxjs';
import { catchError, concatMap, map } from 'rxjs/operators';
import { backoffDelay, retryDelay, type BackoffOptions } from '../kube/backoff.ts';
import type { Logger } from '../log/logger.ts';
import { decide, decideTarget, withMarked, type Decision, type StoreView } from './decide.ts';
import {
  SpecWriteError,
  type DesiredSpec,
  type NncSpecWriter,
  type PoolIpStore,
  type SpecWriteResult,
} from './ports.ts';
import type { MonitorState } from './state.ts';
import type { FailureStage, MonitorEvent, ReconcileOutcome } from './types.ts';

export interface ReconcileContext {
  store: PoolIpStore;
  writer: NncSpecWriter;
  log: Logger;
  report: (event: MonitorEvent) => void;
  now: () => number;
  dryRun: boolean;
  backoff: BackoffOptions;
  random: () => number;
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

export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return 'unknown error';
  }
}

/** A port's promise (or a test's synchronous thenable) as one stage of the reconcile. */
function stage$<T>(stage: FailureStage, call: () => PromiseLike<T>): Observable<T> {
  return defer(() => from(call() as Promise<T>)).pipe(
    catchError((err: unknown) => {
      throw new StageError(stage, err);
    }),
  );
}

/** What an outcome says whatever the end: filled in as the reconcile goes. */
type Facts = Omit<ReconcileOutcome, 'kind' | 'to' | 'wrote'>;

export function reconcile$(
  state: MonitorState,
  ctx: ReconcileContext,
): Observable<ReconcileOutcome> {
  const at = ctx.now();
  const t = decideTarget(state, at);
  ctx.log.info('calculated new request', {
    demand: t.demand,
    batch: t.scaler.batch,
    buffer: t.scaler.buffer,
    max: t.scaler.max,
    target: t.target,
    ...(t.applied !== t.target ? { applied: t.applied } : {}),
    exhausted: t.exhausted,
  });
  const { deferred: _d, recheckAt: _r, ...base } = t;
  const partial: Facts = { ...base, at, marked: 0 };
  return defer(() => {
    const view$ = stage$('read', () => ctx.store.pendingReleaseIds()).pipe(
      concatMap((ids) =>
        stage$('read', () => ctx.store.activeCount()).pipe(
          concatMap((activeCount) =>
            stage$('read', () => ctx.store.markableCount()).pipe(
              map((markableCount): StoreView => ({
                pendingReleaseIds: ids,
                activeCount,
                markableCount,
              })),
            ),
          ),
        ),
      ),
    );
    return view$.pipe(
      map((view) => decide(state, view, at)),
      concatMap((d) => act$(d, partial, ctx)),
    );
  }).pipe(catchError((err: unknown) => of(failed(err, partial, state, ctx))));
}

function act$(d: Decision, partial: Facts, ctx: ReconcileContext): Observable<ReconcileOutcome> {
  partial.reason = d.reason;
  const done = {
    ...partial,
    to: d.from,
    wrote: false,
    ...(d.wake !== undefined ? { wake: d.wake } : {}),
  };
  if (d.spec === undefined) {
    if (d.reason === 'write-window') {
      ctx.log.info('holding write until the write window ends', {
        delta: d.delta,
        until: d.wake?.at,
      });
      return of({ ...done, kind: 'throttled' });
    }
    ctx.log.info('already at target', {
      request: d.from,
      ...(d.deferred ? { deferred: d.target } : {}),
    });
    return of({ ...done, kind: d.deferred ? 'deferred' : 'at-target' });
  }
  ctx.log.info('scaling pool', {
    delta: d.delta,
    ...(d.delta === 0 ? { reason: d.reason } : {}),
  });
  if (ctx.dryRun) {
    ctx.log.info('dry run: not writing', { spec: d.spec });
    return of({ ...done, kind: 'dry-run', spec: d.spec });
  }
  const spec = d.spec;
  const marked$: Observable<string[]> =
    d.mark === 0 ? of([]) : stage$('mark', () => ctx.store.markPendingRelease(d.mark));
  return marked$.pipe(
    catchError((err: unknown) => {
      ctx.report({ type: 'mark-failed', count: d.mark, error: errorText(err) });
      throw err;
    }),
    concatMap((ids) => {
      partial.marked = Array.isArray(ids) ? ids.length : d.mark;
      partial.spec = withMarked(spec, Array.isArray(ids) ? ids : []);
      return write$(partial.spec, ctx);
    }),
    map((result): ReconcileOutcome => {
      const generation = generationOf(result);
      ctx.log.info('scaled pool', { request: d.applied });
      return {
        ...done,
        ...partial,
        kind: d.delta === 0 ? 'corrected' : 'scaled',
        to: d.applied,
        wrote: true,
        ...(generation !== undefined ? { generation } : {}),
      };
    }),
  );
}

function write$(spec: DesiredSpec, ctx: ReconcileContext): Observable<void | SpecWriteResult> {
  return stage$('write', () => ctx.writer.writeSpec(spec));
}

function failed(
  err: unknown,
  partial: Facts,
  state: MonitorState,
  ctx: ReconcileContext,
): ReconcileOutcome {
  const stage: FailureStage = err instanceof StageError ? err.stage : 'write';
  const cause = err instanceof StageError ? err.cause : err;
  const statusCode = cause instanceof SpecWriteError ? cause.statusCode : undefined;
  const retryAfter = cause instanceof SpecWriteError ? cause.retryAfterSeconds : undefined;
  const retryInMs = retryDelay(backoffDelay(state.failures, ctx.backoff, ctx.random), retryAfter);
  const what =
    stage === 'mark'
      ? 'failed to mark IPs PendingRelease'
      : stage === 'read'
        ? 'failed to read the IP store'
        : 'failed to write the NNC spec';
  const error = `${what}: ${errorText(cause)}`;
  ctx.log.error('reconcile failed', {
    error,
    stage,
    ...(statusCode !== undefined ? { statusCode } : {}),
    retryInMs,
  });
  if (stage === 'write') {
    ctx.report({
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
    wake: { reason: 'retry', at: ctx.now() + retryInMs },
  };
}

function generationOf(result: void | SpecWriteResult): number | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const g = result.generation;
  return typeof g === 'number' && Number.isFinite(g) ? g : undefined;
}
