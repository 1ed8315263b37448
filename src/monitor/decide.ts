// What one reconcile should do, decided from the monitor's state and what the
// IP store holds, purely: the target, the delta, how many IPs to mark
// PendingRelease, the spec to write, or nothing, and why. The CNS v2 monitor's
// reconcile step, with this product's additions (stale ids, out-of-band
// edits, damping, the write window, the marking bounds of decision records
// 0004 and 0016, a surplus given back) as further rows of the same table.
// Effects live in reconcile.ts.
import type { PolicyExplanation } from '../scaling/policies/policy.ts';
import { calculateTarget } from '../scaling/target.ts';
import type { DesiredSpec, StoreView } from './ports.ts';
import { currentSpec, normaliseIds, releaseCount, sameSpec } from './spec.ts';
import { effectiveScaler, type MonitorState } from './state.ts';
import type { DecisionReason, TargetFigures, WakeUp } from './types.ts';

export type { StoreView } from './ports.ts';

/** The target side of a decision: needs no store. */
export interface TargetDecision extends TargetFigures {
  /** A lower target is being held back by damping. */
  deferred: boolean;
  /** When damping may decide otherwise. */
  recheckAt?: number;
  /** The policy's reason, when it holds back or reaches beyond the target. */
  why?: PolicyExplanation;
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
  const exhausted = state.exhausted === true;
  const d = state.config.policy.decide(state.policyMemory, {
    now,
    demand,
    target,
    request: from,
    scaler,
    exhausted,
    ...(state.nnc ? { allocated: state.nnc.allocated } : {}),
  });
  return {
    demand,
    exhausted,
    scaler,
    target,
    applied: d.applied,
    from,
    delta: d.applied - from,
    deferred: d.deferred,
    ...(d.recheckAt !== undefined ? { recheckAt: d.recheckAt } : {}),
    ...(d.why !== undefined ? { why: d.why } : {}),
  };
}

/** The whole decision; `t` is decideTarget's answer when the caller already has it. */
export function decide(
  state: MonitorState,
  view: StoreView,
  now: number,
  t: TargetDecision = decideTarget(state, now),
): Decision {
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
  const clearBy = staleClearDeadline(state, spec, current);
  if (t.delta === 0 && mark === 0 && clearBy !== undefined && now < clearBy) {
    // Only stale ids to drop: they ride along with the next write, or go at clearBy.
    const at = t.recheckAt === undefined ? clearBy : Math.min(t.recheckAt, clearBy);
    return {
      ...t,
      reason: 'deferred',
      mark: 0,
      wake: { reason: 'damping', at },
      why: {
        ...(t.why ?? { policy: state.config.policy.name, summary: '' }),
        summary: `${t.why ? `${t.why.summary}; ` : ''}dropping ${state.nnc?.stale.length ?? 0} stale ids from ipsNotInUse rides along with the next write, at the latest at ${new Date(clearBy).toISOString()}`,
        staleClearBy: clearBy,
      },
    };
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

/**
 * When a write whose only change is dropping stale ids must go out, under a
 * policy that lets it wait for the next write (PoolPolicy.staleClearMs);
 * undefined when the spec differs otherwise or the policy does not wait.
 */
function staleClearDeadline(
  state: MonitorState,
  spec: DesiredSpec,
  current: DesiredSpec | undefined,
): number | undefined {
  const waitMs = state.config.policy.staleClearMs ?? 0;
  const nnc = state.nnc;
  if (!(waitMs > 0) || nnc === undefined || current === undefined) return undefined;
  if (nnc.staleSince === undefined || state.unwrittenMarks > 0) return undefined;
  if (spec.requestedIPCount !== current.requestedIPCount) return undefined;
  const stale = new Set(nnc.stale);
  const withStale = normaliseIds([
    ...spec.ipsNotInUse,
    ...current.ipsNotInUse.filter((id) => stale.has(id)),
  ]);
  if (!sameSpec({ requestedIPCount: spec.requestedIPCount, ipsNotInUse: withStale }, current)) {
    return undefined;
  }
  return nnc.staleSince + waitMs;
}
