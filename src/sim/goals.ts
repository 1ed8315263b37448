// The goal table for `--release-delay auto`
// (docs/design/scaling.md#the-goal-table), checked against CNS v2
// (`--release-delay 0`) run on the same trace: each goal is a limit on one
// figure, absolute, as a multiple of CNS v2's, or CNS v2's plus a margin.
// Pure: `make bench` (bench/release-policy.ts) runs the traces and prints what
// this says. The hold-out traces have no goals of their own; they are held to
// the bar every yardstick shares (pod wait p99 within 0.5 s of CNS v2) and to
// doing no harm (no more writes or churn than CNS v2).
import { churn } from './compare.ts';
import type { SimulationSummary } from './summary.ts';

export type Figure = 'writes' | 'churn' | 'idle' | 'waitP99';

export type Limit =
  | { kind: 'at-most'; value: number }
  | { kind: 'times'; factor: number }
  | { kind: 'plus'; seconds: number }
  /** Shown for the record, not a goal (idle IPs on the hold-outs). */
  | { kind: 'none' };

export interface Goal {
  figure: Figure;
  limit: Limit;
}

export const FIGURES: readonly Figure[] = ['writes', 'churn', 'idle', 'waitP99'];

const WAIT: Goal = { figure: 'waitP99', limit: { kind: 'plus', seconds: 0.5 } };
const times = (figure: Figure, factor: number): Goal => ({
  figure,
  limit: { kind: 'times', factor },
});

/** The goals per yardstick trace, as docs/design/scaling.md#the-goal-table states them. */
export const YARDSTICK_GOALS: Record<string, Goal[]> = {
  'burst-110-11m': [
    { figure: 'writes', limit: { kind: 'at-most', value: 2 } },
    times('idle', 1.05),
    WAIT,
  ],
  'flap-24-25-1h': [
    { figure: 'writes', limit: { kind: 'at-most', value: 10 } },
    times('churn', 0.2),
    times('idle', 1.5),
    WAIT,
  ],
  'job-waves-2h': [times('writes', 0.2), times('churn', 0.6), times('idle', 2.0), WAIT],
  'diurnal-churn-24h': [times('writes', 0.5), times('churn', 0.6), times('idle', 1.1), WAIT],
};

/** What every hold-out trace is held to: no harm, and the shared pod-wait bar. */
export const HOLDOUT_GOALS: Goal[] = [
  times('writes', 1),
  times('churn', 1),
  { figure: 'idle', limit: { kind: 'none' } },
  WAIT,
];

export function figureOf(s: SimulationSummary, figure: Figure): number {
  switch (figure) {
    case 'writes':
      return s.nncWrites;
    case 'churn':
      return churn(s);
    case 'idle':
      return s.idleIpSeconds;
    case 'waitP99':
      return s.podWaitP99Seconds;
  }
}

export interface Verdict {
  figure: Figure;
  /** auto's figure and CNS v2's. */
  value: number;
  baseline: number;
  /** auto / CNS v2 (1 when both are 0). */
  ratio: number;
  /** The goal as docs/design/scaling.md writes it, e.g. "<= 0.2 x", "<= 10", "<= CNS v2 + 0.5 s". */
  goal: string;
  /** The largest value that meets the goal (Infinity: no goal). */
  bound: number;
  met: boolean;
  /** False for a figure shown without a goal. */
  hasGoal: boolean;
}

function goalText(limit: Limit): string {
  switch (limit.kind) {
    case 'at-most':
      return `<= ${limit.value}`;
    case 'times':
      return `<= ${limit.factor} x`;
    case 'plus':
      return `<= CNS v2 + ${limit.seconds} s`;
    case 'none':
      return 'none';
  }
}

function boundOf(limit: Limit, baseline: number): number {
  switch (limit.kind) {
    case 'at-most':
      return limit.value;
    case 'times':
      return limit.factor * baseline;
    case 'plus':
      return baseline + limit.seconds;
    case 'none':
      return Number.POSITIVE_INFINITY;
  }
}

/** Each goal checked: auto's figure against the bound CNS v2's figure sets. */
export function checkGoals(
  goals: readonly Goal[],
  auto: SimulationSummary,
  cnsV2: SimulationSummary,
): Verdict[] {
  return goals.map((g) => {
    const value = figureOf(auto, g.figure);
    const baseline = figureOf(cnsV2, g.figure);
    const bound = boundOf(g.limit, baseline);
    return {
      figure: g.figure,
      value,
      baseline,
      ratio: baseline === 0 ? (value === 0 ? 1 : Number.POSITIVE_INFINITY) : value / baseline,
      goal: goalText(g.limit),
      bound,
      // A millionth of slack for the floating-point products of the bound.
      met: value <= bound + Math.abs(bound) * 1e-9,
      hasGoal: g.limit.kind !== 'none',
    };
  });
}

/** One cell of the printed table: auto vs CNS v2, their ratio (or difference), the goal and the mark. */
export function verdictCell(v: Verdict): string {
  const wait = v.figure === 'waitP99';
  const value = wait ? `${v.value} s vs ${v.baseline} s` : `${v.value} vs ${v.baseline}`;
  const ratio = wait
    ? `${v.value - v.baseline >= 0 ? '+' : ''}${(v.value - v.baseline).toFixed(2)} s`
    : `${v.ratio.toFixed(2)} x`;
  if (!v.hasGoal) return `${value} (${ratio}; no goal)`;
  return `${value} (${ratio}; goal ${v.goal}) ${v.met ? 'PASS' : 'FAIL'}`;
}
