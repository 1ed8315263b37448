// A rise in a burst reaches one batch further on a slow control plane.
// The fulfiller reads the spec when it begins a round of the node and works
// one round at a time (src/fulfiller/queue.ts); an Azure NIC update takes
// up to a minute. A rise written while the node has no round under way
// begins one at once, and that round delivers what the request said then.
// When demand is climbing, pod by pod rather than in one step, at a batch
// or more in a quarter of a round, it passes that request before the round
// lands, and the pods that come after it wait for the next round as well:
// two rounds in all, where a round that read a batch more would have served
// them in one (docs/decisions/0034). CNS v2 meets the same luck whenever
// its control plane is free at a burst's start; this rule is why `auto`
// does not meet it more often. The budget's guard (idle-budget.ts
// `budgeted`) still judges the reach: only when the churn saved so far pays
// for releasing it unused, and the budget can hold it. Pure: memory and
// time in, decision out.
import { whyWith, type PolicyDecision, type PolicyView } from '../policy.ts';
import type { IdleAccount } from './idle-account.ts';

/** Demand rising a batch or more in this share of a round's time: a burst. */
export const BURST_SHARE_OF_ROUND = 0.25;
/** How far back the lows of demand are kept (ms): a quarter of the slowest round. */
export const LOWS_KEPT_MS = 5 * 60_000;

/**
 * Demand's recent lows, oldest first, each lower than every one after it: the
 * lowest demand since any moment is the first kept at or after it. Bounded by
 * LOWS_KEPT_MS and by the number of distinct demands.
 */
export type DemandLows = readonly { at: number; demand: number }[];

/** The lows after one more observation of demand. */
export function observeLows(lows: DemandLows, at: number, demand: number): DemandLows {
  const kept = lows.filter((l) => l.at >= at - LOWS_KEPT_MS && l.demand < demand);
  return [...kept, { at, demand }];
}

/**
 * How far demand rose within the last `ms` (now against the lowest since),
 * since when (ms ago: when it last stood at that lowest), and the largest
 * part of that rise that came at once (between two lows).
 */
export function climbWithin(
  lows: DemandLows,
  now: number,
  demand: number,
  ms: number,
): { risen: number; overMs: number; largestStep: number } {
  const since = lows.filter((l) => l.at >= now - ms);
  if (since.length === 0) return { risen: 0, overMs: 0, largestStep: 0 };
  let largestStep = 0;
  for (let i = 1; i < since.length; i += 1) {
    largestStep = Math.max(largestStep, since[i]!.demand - since[i - 1]!.demand);
  }
  const last = since[since.length - 1]!.demand;
  largestStep = Math.max(largestStep, demand - last);
  const low = since[0]!;
  return { risen: Math.max(0, demand - low.demand), overMs: now - low.at, largestStep };
}

/**
 * `d`, reaching one batch above the rising target when the round this write
 * begins would read less than the burst needs by its end (above).
 */
export function burstReach(
  d: PolicyDecision,
  v: PolicyView,
  account: IdleAccount,
  lows: DemandLows,
): PolicyDecision {
  const { roundMs, target, request, scaler } = v;
  if (!(roundMs !== undefined && roundMs > 0) || !(target > request)) return d;
  // A round under way reads the request when it ends, on what demand did meanwhile.
  if (account.round !== undefined) return d;
  const windowMs = BURST_SHARE_OF_ROUND * roundMs;
  const { risen, overMs, largestStep } = climbWithin(lows, v.now, v.demand, windowMs);
  // Climbing: half a batch or more so far, in parts (a step that came at
  // once is over, and the round reads all of it), at a pace that adds a
  // batch within the window.
  const climbing = 2 * risen >= scaler.batch && 2 * largestStep <= risen;
  const pace = (risen * windowMs) / Math.max(1000, overMs);
  if (!climbing || largestStep >= scaler.batch || pace < scaler.batch) return d;
  const applied = Math.min(scaler.max, target + scaler.batch);
  if (!(applied > d.applied)) return d;
  const clause =
    `reaching ${applied} for the target ${target}: demand rose ${risen} pods in ` +
    `${Math.round(overMs / 1000)} s, faster than a round of the control plane ` +
    `(${Math.round(roundMs / 1000)} s) that reads this request now can follow`;
  return { ...d, applied, deferred: false, why: whyWith(d, clause) };
}
