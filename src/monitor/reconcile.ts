// One reconcile's effects, through the monitor's two ports: read the store
// once (one view, one transaction), decide once (pure, decide.ts), mark IPs
// PendingRelease, write the NNC spec, and turn what happened into one
// outcome, failures included (each with its stage, the facts known when it
// failed, and the retry's backoff). It never throws and never changes the
// monitor's state: the outcome is fed back into the reducer.
import { defer, from, of, type Observable } from 'rxjs';
import { catchError, concatMap, map } from 'rxjs/operators';
import { backoffDelay, retryDelay, type BackoffOptions } from '../kube/backoff.ts';
import { errorText } from '../log/error-text.ts';
import type { Logger } from '../log/logger.ts';
import { decide, decideTarget, withMarked, type Decision, type TargetDecision } from './decide.ts';
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

/** What an outcome says whatever the end: the facts known so far. */
type Facts = Omit<ReconcileOutcome, 'kind' | 'to' | 'wrote'>;

/** Raised inside a reconcile: the stage that failed and the facts known then. */
class StageError extends Error {
  override readonly name = 'StageError';
  readonly stage: FailureStage;
  readonly facts: Facts;
  override readonly cause: unknown;
  constructor(stage: FailureStage, facts: Facts, cause: unknown) {
    super(errorText(cause));
    this.stage = stage;
    this.facts = facts;
    this.cause = cause;
  }
}

/** A port's promise (or a test's synchronous thenable) as one stage of the reconcile. */
function stage$<T>(stage: FailureStage, facts: Facts, call: () => PromiseLike<T>): Observable<T> {
  return defer(() => from(call() as Promise<T>)).pipe(
    catchError((err: unknown) => {
      throw new StageError(stage, facts, err);
    }),
  );
}

export function reconcile$(
  state: MonitorState,
  ctx: ReconcileContext,
): Observable<ReconcileOutcome> {
  const at = ctx.now();
  const t = decideTarget(state, at);
  logTarget(t, ctx.log);
  const { deferred: _d, recheckAt: _r, ...figures } = t;
  const known: Facts = { ...figures, at, marked: 0 };
  return stage$('read', known, () => ctx.store.view()).pipe(
    map((view) => decide(state, view, at, t)),
    concatMap((d) => act$(d, { ...known, reason: d.reason }, ctx)),
    catchError((err: unknown) => of(failed(err, known, state, ctx))),
  );
}

function logTarget(t: TargetDecision, log: Logger): void {
  log.info('calculated new request', {
    demand: t.demand,
    batch: t.scaler.batch,
    buffer: t.scaler.buffer,
    max: t.scaler.max,
    target: t.target,
    ...(t.applied !== t.target ? { applied: t.applied } : {}),
    exhausted: t.exhausted,
  });
}

/** Carries out a decision: nothing to write, a dry run, or mark then write. */
function act$(d: Decision, decided: Facts, ctx: ReconcileContext): Observable<ReconcileOutcome> {
  const unwritten = {
    ...decided,
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
      return of({ ...unwritten, kind: 'throttled' });
    }
    ctx.log.info('already at target', {
      request: d.from,
      ...(d.deferred ? { deferred: d.target } : {}),
    });
    return of({ ...unwritten, kind: d.deferred ? 'deferred' : 'at-target' });
  }
  ctx.log.info('scaling pool', {
    delta: d.delta,
    ...(d.delta === 0 ? { reason: d.reason } : {}),
  });
  if (ctx.dryRun) {
    ctx.log.info('dry run: not writing', { spec: d.spec });
    return of({ ...unwritten, kind: 'dry-run', spec: d.spec });
  }
  const spec = d.spec;
  return mark$(d, decided, ctx).pipe(
    concatMap((ids) => {
      const marked: Facts = {
        ...decided,
        marked: Array.isArray(ids) ? ids.length : d.mark,
        spec: withMarked(spec, Array.isArray(ids) ? ids : []),
      };
      return write$(marked, ctx).pipe(
        map((result): ReconcileOutcome => {
          const generation = generationOf(result);
          ctx.log.info('scaled pool', { request: d.applied });
          return {
            ...unwritten,
            ...marked,
            kind: d.delta === 0 ? 'corrected' : 'scaled',
            to: d.applied,
            wrote: true,
            ...(generation !== undefined ? { generation } : {}),
          };
        }),
      );
    }),
  );
}

/** Marks the decision's IPs PendingRelease (none to mark: no call). */
function mark$(d: Decision, decided: Facts, ctx: ReconcileContext): Observable<string[]> {
  if (d.mark === 0) return of([]);
  return stage$('mark', decided, () => ctx.store.markPendingRelease(d.mark)).pipe(
    catchError((err: unknown) => {
      ctx.report({ type: 'mark-failed', count: d.mark, error: errorText(err) });
      throw err;
    }),
  );
}

function write$(marked: Facts, ctx: ReconcileContext): Observable<void | SpecWriteResult> {
  return stage$('write', marked, () => ctx.writer.writeSpec(marked.spec as DesiredSpec));
}

function failed(
  err: unknown,
  known: Facts,
  state: MonitorState,
  ctx: ReconcileContext,
): ReconcileOutcome {
  const stage: FailureStage = err instanceof StageError ? err.stage : 'write';
  const facts = err instanceof StageError ? err.facts : known;
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
    ...facts,
    kind: 'failed',
    to: facts.from,
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
