// `auto` against the fixed-delay frontier (docs/decisions/0034): on one
// trace, the fixed delay that makes the fewest writes (then the least churn)
// among those whose idle IP-seconds fit within the budget times CNS v2's
// (delay 0, CNS v2 itself, always fits), and whether auto keeps its promise
// and is within FRONTIER_SLACK of that delay's writes and churn. Pure: the
// bench (bench/auto-budget.ts) and the tests run the simulations.
import { churn } from './compare.ts';
import type { SimulationSummary } from './summary.ts';

/** auto may make this share more writes (and churn) than the best fitting fixed delay. */
export const FRONTIER_SLACK = 0.1;
/** ... or this many more writes / churned IPs, on traces where the best makes only a handful. */
export const FRONTIER_WRITES_ABS = 2;
export const FRONTIER_CHURN_ABS = 32;
/** The promise's idle check allows 1 % (the account and the simulator integrate the same steps). */
export const PROMISE_IDLE_SLACK = 0.01;

export interface Ratios {
  writes: number;
  churn: number;
  idle: number;
}

export interface FrontierVerdict {
  /** The best fixed delay (seconds) that fits the budget. */
  bestDelay: number;
  /** Its figures and auto's, each x CNS v2. */
  best: Ratios;
  auto: Ratios;
  /** Figures that break the promise: idle, writes, churn, wait. */
  promiseBroken: string[];
  /** Figures where auto is beyond the best fitting delay's by more than the slack: writes, churn. */
  frontierMissed: string[];
}

const ratio = (a: number, b: number): number =>
  b === 0 ? (a === 0 ? 1 : Number.POSITIVE_INFINITY) : a / b;

function ratios(s: SimulationSummary, c: SimulationSummary): Ratios {
  return {
    writes: ratio(s.nncWrites, c.nncWrites),
    churn: ratio(churn(s), churn(c)),
    idle: ratio(s.idleIpSeconds, c.idleIpSeconds),
  };
}

/** The fixed delay that fits within `budget` x CNS v2's idle with the fewest writes, then churn. */
export function bestFittingDelay(
  budget: number,
  fixed: ReadonlyMap<number, SimulationSummary>,
): number {
  const cns = fixed.get(0);
  if (cns === undefined) throw new Error('the fixed delays must include 0 (CNS v2)');
  let best = 0;
  for (const [d, s] of fixed) {
    if (s.idleIpSeconds > budget * cns.idleIpSeconds) continue;
    const b = fixed.get(best)!;
    if (s.nncWrites < b.nncWrites || (s.nncWrites === b.nncWrites && churn(s) < churn(b))) best = d;
  }
  return best;
}

/** The promise of --idle-budget: the figures it breaks. */
export function promiseBroken(
  budget: number,
  auto: SimulationSummary,
  cns: SimulationSummary,
): string[] {
  const broken: string[] = [];
  if (auto.idleIpSeconds > budget * cns.idleIpSeconds * (1 + PROMISE_IDLE_SLACK))
    broken.push('idle');
  if (auto.nncWrites > cns.nncWrites) broken.push('writes');
  if (churn(auto) > churn(cns)) broken.push('churn');
  if (auto.podWaitP99Seconds > cns.podWaitP99Seconds + 0.5) broken.push('wait');
  return broken;
}

export function frontierVerdict(
  budget: number,
  auto: SimulationSummary,
  fixed: ReadonlyMap<number, SimulationSummary>,
): FrontierVerdict {
  const cns = fixed.get(0)!;
  const bestDelay = bestFittingDelay(budget, fixed);
  const best = fixed.get(bestDelay)!;
  const missed: string[] = [];
  const within = (a: number, b: number, abs: number): boolean =>
    a <= Math.max(b * (1 + FRONTIER_SLACK), b + abs);
  if (!within(auto.nncWrites, best.nncWrites, FRONTIER_WRITES_ABS)) missed.push('writes');
  if (!within(churn(auto), churn(best), FRONTIER_CHURN_ABS)) missed.push('churn');
  return {
    bestDelay,
    best: ratios(best, cns),
    auto: ratios(auto, cns),
    promiseBroken: promiseBroken(budget, auto, cns),
    frontierMissed: missed,
  };
}

/**
 * The fixed delays that keep the promise `auto` is held to at `budget`: idle
 * so far within the budget x CNS v2's at every moment (`peaks`, each run's
 * peakIdleRatio), no more writes or churn than CNS v2, and pod wait p99
 * within 0.5 s of CNS v2's (delay 0, CNS v2 itself, always does).
 */
export function promiseKeepingDelays<S extends SimulationSummary>(
  budget: number,
  fixed: ReadonlyMap<number, S>,
  peaks: ReadonlyMap<number, { ratio: number } | undefined>,
): Map<number, S> {
  const cns = fixed.get(0);
  if (cns === undefined) throw new Error('the fixed delays must include 0 (CNS v2)');
  return new Map(
    [...fixed].filter(
      ([d, s]) =>
        d === 0 ||
        ((peaks.get(d)?.ratio ?? 0) <= budget &&
          promiseBroken(budget, s, cns).filter((f) => f !== 'idle').length === 0),
    ),
  );
}

/**
 * Why `auto` missed the frontier on a row, in one line, from the figures
 * alone (its idle at the end and at its peak against the best delay's):
 * - churn only: its writes are within the bound (it released deeper, or
 *   more often, than the delay);
 * - budget left: it held markedly less idle than the delay (by 5 % of CNS
 *   v2's or more): it did not spend what the delay spent (the holds the
 *   rules of docs/decisions/0034 do not start: no record of when demand
 *   comes back, or a release's round that could meet a rise);
 * - spent alike: it held about as much, on holds that saved fewer writes.
 */
export function missReason(v: FrontierVerdict, autoPeak: number | undefined): string {
  if (v.frontierMissed.length === 0) return '';
  if (!v.frontierMissed.includes('writes')) {
    return `churn only (writes ${v.auto.writes.toFixed(2)} vs ${v.best.writes.toFixed(2)} x CNS v2)`;
  }
  if (v.auto.idle <= v.best.idle - 0.05) {
    return (
      `budget left: idle ${v.auto.idle.toFixed(2)} vs ${v.best.idle.toFixed(2)} x CNS v2` +
      (autoPeak !== undefined ? ` (auto's highest ${autoPeak.toFixed(2)})` : '')
    );
  }
  return `spent alike (idle ${v.auto.idle.toFixed(2)} vs ${v.best.idle.toFixed(2)}), on holds that saved fewer writes`;
}

/** Idle so far (summary.ts `idleSoFar` pairs) at `t`, looking from pair `from` on. */
function idleAt(pairs: readonly number[], t: number, from: number): { idle: number; i: number } {
  if (pairs.length === 0) return { idle: 0, i: 0 };
  let i = from;
  while (i + 2 < pairs.length && pairs[i + 2]! <= t) i += 2;
  const t0 = pairs[i]!;
  const v0 = pairs[i + 1]!;
  // Before the first pair nothing was idle; after the last the run is over.
  if (t < t0) return { idle: 0, i };
  if (i + 2 >= pairs.length) return { idle: v0, i };
  const t1 = pairs[i + 2]!;
  const v1 = pairs[i + 3]!;
  return { idle: v0 + ((v1 - v0) * (t - t0)) / (t1 - t0), i };
}

/**
 * The highest ratio of a run's idle so far to CNS v2's, and when (seconds):
 * what `auto`, held to its budget at every moment, is held to
 * (docs/decisions/0034), where a fixed delay judged by its idle at the end
 * may have run above the budget on the way. Both grow linearly between
 * their pairs, and a ratio of two linear functions is monotone on an
 * interval, so the pairs' times are the only moments to check. Moments
 * where CNS v2 has held nothing idle yet are skipped (the runs compared
 * start alike, so their ratio starts at 1); undefined when all are.
 */
export function peakIdleRatio(
  run: readonly number[],
  cns: readonly number[],
): { ratio: number; at: number } | undefined {
  const times: number[] = [];
  for (let k = 0; k < run.length; k += 2) times.push(run[k]!);
  for (let k = 0; k < cns.length; k += 2) times.push(cns[k]!);
  times.sort((a, b) => a - b);
  let peak: { ratio: number; at: number } | undefined;
  let ri = 0;
  let ci = 0;
  for (const t of times) {
    const r = idleAt(run, t, ri);
    const c = idleAt(cns, t, ci);
    ri = r.i;
    ci = c.i;
    if (!(c.idle > 0)) continue;
    const ratio = r.idle / c.idle;
    if (peak === undefined || ratio > peak.ratio) peak = { ratio, at: t };
  }
  return peak;
}
