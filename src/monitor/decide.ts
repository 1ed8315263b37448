// What one reconcile should do, decided from the monitor's state and what the
// IP store holds, purely: the target, the delta, how many IPs to mark
// PendingRelease, the spec to write, or nothing, and why. The CNS v2 monitor's
// reconcile step, with this product's additions (stale ids, out-of-band
// edits, damping, the write window, the marking bounds of decision records
// 0004 and 0016, a surplus given back) as further rows of the same table.
// Effects live in reconcile.ts.
import { dampedTarget } from '../scaling/damping.ts';
import { calculateTarget } from '../scaling/target.ts';
import type { DesiredSpec } from './ports.ts';
import { currentSpec, normaliseIds, releaseCount, sameSpec } from './spec.ts';
import { effectiveScaler, type MonitorState } from './state.ts';
import type { DecisionReason, TargetFigures, WakeUp } from './types.ts';

/** What the store holds that a decision depends on, read just before it. */
export interface StoreView {
  /** Ids of every PendingRelease IP. */
  pendingReleaseIds: readonly string[];
  /** IPs that are not PendingRelease. */
  activeCount: number;
  /** IPs that can be marked PendingRelease (Available, PendingProgramming). */
  markableCount: number;
}

/** The target side of a decision: needs no store. */
export interface TargetDecision extends TargetFigures {
  /** A lower target is being held back by damping. */
  deferred: boolean;
  /** When damping may decide otherwise. */
  recheckAt?: number;
}

export interface Decision extends TargetDecision {
  reason: DecisionReason;
  /** IPs to mark PendingRelease before writing. */
  mark: number;
  /**
   * The spec to write, or none. Its ipsNotInUse are the PendingRelease ids
   * the store holds now that the status backs (stale ones dropped, whether
   * the observed spec lists them or not); the ids `mark` yields are added
   * to them by whoever marks (withMarked).
   */
  spec?: DesiredSpec;
  /** When the monitor should come back by itself. */
  wake?: WakeUp;
}

export function decideTarget(state: MonitorState, now: number): TargetDecision {
  const demand = state.demand ?? 0;
  const scaler = effectiveScaler(state);
  const target = calculateTarget(demand, scaler);
  const from = state.request ?? 0;
  const damped = dampedTarget(state.history, now, from, state.config.releaseDelayMs);
  return {
    demand,
    exhausted: state.exhausted === true,
    scaler,
    target,
    applied: damped.target,
    from,
    delta: damped.target - from,
    deferred: damped.deferred,
    ...(damped.recheckAt !== undefined ? { recheckAt: damped.recheckAt } : {}),
  };
}

export function decide(state: MonitorState, view: StoreView, now: number): Decision {
  const t = decideTarget(state, now);
  const damping: { wake?: WakeUp } =
    t.recheckAt !== undefined ? { wake: { reason: 'damping', at: t.recheckAt } } : {};
  const backed = new Set(state.nnc?.backed ?? []);
  const spec: DesiredSpec = {
    requestedIPCount: t.applied,
    ipsNotInUse: normaliseIds(view.pendingReleaseIds).filter((id) => backed.has(id)),
  };
  const current = state.nnc ? currentSpec(state.nnc.observed, state.written) : undefined;
  const mark = releaseCount(t.applied, view);
  if (t.delta === 0 && mark === 0 && current !== undefined && sameSpec(spec, current)) {
    return { ...t, reason: t.deferred ? 'deferred' : 'at-target', mark: 0, ...damping };
  }
  const windowEnd = (state.lastWriteAt ?? Number.NEGATIVE_INFINITY) + state.config.writeWindowMs;
  if (t.delta !== 0 && now < windowEnd) {
    return {
      ...t,
      reason: 'write-window',
      mark: 0,
      wake: { reason: 'write-window', at: windowEnd },
    };
  }
  return {
    ...t,
    reason:
      t.delta > 0 ? 'scale-up' : t.delta < 0 ? 'scale-down' : mark > 0 ? 'surplus' : 'spec differs',
    mark,
    spec,
    ...damping,
  };
}

/** The spec to write once the decision's marks are made. */
export function withMarked(spec: DesiredSpec, marked: readonly string[]): DesiredSpec {
  if (marked.length === 0) return spec;
  return {
    requestedIPCount: spec.requestedIPCount,
    ipsNotInUse: normaliseIds([...spec.ipsNotInUse, ...marked]),
  };
}
