// Shadow fixed delays: what each of a family of fixed `--release-delay`s
// would have held on the node's own demand, kept live next to the idle
// account (docs/decisions/0034). A fixed delay's request is a pure function
// of the target's history (the highest target of the last `delay` seconds,
// damping.ts), so the sidecar, which sees the demand, can integrate each
// candidate's idle IP-seconds (since start and over the window) and count its
// writes and churn without running it. `auto` then follows the longest
// candidate whose idle fits within its allowance (since start and over the
// day's window; `allowance` below) and whose recent pace the budget left can
// pay (`Pace`), with hysteresis: a budget is spent the way the best fixed
// delay in hindsight would have spent it.
//
// The targets are kept as suffix maxima (each run is higher than every later
// one), so the highest target over any window ending now is the first run
// still in it: at most one run per target value (17 with batch 16), pruned
// to the longest candidate's window. O(runs x candidates) per event, pure.
import type { Observation } from '../policy.ts';
import { BUCKET_MS, BUCKETS } from './idle-account.ts';

/** The fixed delays simulated (seconds); 0 is CNS v2, the yardstick of the fit. */
export const CANDIDATE_DELAYS_SECONDS: readonly number[] = [0, 10, 30, 60, 120, 300, 600, 1200];
/** A candidate is taken up only with this share of the allowance's headroom (above 1) to spare (hysteresis). */
export const FIT_MARGIN = 0.05;

/**
 * The idle ratio (x CNS v2's) a followed delay may run at, given what the
 * pool itself has held: `held` and `cns` idle IP-seconds counted so far
 * (since start, or over the window). It is the largest r for which holding r
 * x CNS v2's for as long again as has been counted keeps the account within
 * the budget: held + r x cns <= budget x 2 cns, so r = 2 budget - held / cns.
 * A pool that held exactly its budget gets the budget; one that held less
 * (it followed shorter delays while the longer ones ran above the budget,
 * as they do early in a trace) may follow a delay above the budget until its
 * own ratio rises to meet it; one that held more gets less. Nothing counted
 * yet: the budget. The budget guard (idle-budget.ts) still has the last
 * word at every moment.
 */
export function allowance(budget: number, held: number, cns: number): number {
  if (!(cns > 0)) return budget;
  return 2 * budget - held / cns;
}

/** The allowances since start and over the window (see `allowance`). */
export interface Allowance {
  total: number;
  window: number;
  /**
   * CNS v2's idle IP-seconds the ratios are of (since start and over the
   * window): the idle account's, which models the control plane's lag and
   * CNS v2's write window as the promise is measured. Absent: the 0 s
   * candidate's (no lag).
   */
  cns?: { total: number; window: number };
  /** What is left of the budget, against the candidates' recent pace (`Pace`). */
  pace?: Pace;
}

/** The last PACE_BUCKETS buckets, the current one included, over which a candidate's pace is taken. */
export const PACE_BUCKETS = 3;

/**
 * A candidate is followed only while what it spent beyond the budget over
 * the last PACE_BUCKETS hours is no more than the budget left (IP-seconds,
 * since start and over the window): at that pace, what is left lasts as long
 * again. Without it `auto` followed a long delay through quiet hours, where
 * it fit, until the pool had spent its whole budget, and then had none for
 * the shorter delays of the busy hours (docs/decisions/0034).
 */
export interface Pace {
  /** Start (ms) of the oldest bucket counted. */
  since: number;
  /** CNS v2's idle IP-seconds in those buckets (the idle account's). */
  cnsIdle: number;
  budget: number;
  /** IP-seconds the pool may still hold beyond the budget (idle-account.ts `budgetLeft`, at least 0). */
  budgetLeft: number;
}

/** The allowance with the take-up margin kept back: FIT_MARGIN of its headroom above 1. */
export function takeUpRatio(ratio: number): number {
  return ratio > 1 ? 1 + (ratio - 1) * (1 - FIT_MARGIN) : ratio;
}

/** A target value and when it was in effect; `end` is Infinity for the current one. */
export interface TargetRun {
  start: number;
  end: number;
  target: number;
}

export interface ShadowBucket {
  start: number;
  idle: number;
}

/** One candidate fixed delay, as it would have done on the demand seen live. */
export interface ShadowDelay {
  seconds: number;
  /** Idle IP-seconds since counting started. */
  idle: number;
  /** The window's buckets (BUCKET_MS each), oldest first. */
  buckets: ShadowBucket[];
  /** NNC writes (a release: 2, its stale-id clear included) and IPs churned. */
  writes: number;
  churn: number;
}

export interface Shadows {
  /** Integrated up to here (ms). */
  at?: number;
  demand: number;
  /** Counting (the last observation was live, not replayed history). */
  live: boolean;
  /** Suffix maxima of the target, oldest (highest) first. */
  runs: TargetRun[];
  delays: ShadowDelay[];
  /** The delay (seconds) followed now. */
  following: number;
}

export function emptyShadows(seconds: readonly number[] = CANDIDATE_DELAYS_SECONDS): Shadows {
  return {
    demand: 0,
    live: false,
    runs: [],
    delays: seconds.map((s) => ({ seconds: s, idle: 0, buckets: [], writes: 0, churn: 0 })),
    following: 0,
  };
}

const longest = (s: Shadows): number => Math.max(0, ...s.delays.map((d) => d.seconds)) * 1000;

/** The request a fixed delay of `delayMs` would hold at `t`: the highest target in [t - delay, t]. */
export function shadowRequest(
  runs: readonly TargetRun[],
  t: number,
  delayMs: number,
): number | undefined {
  for (const r of runs) if (r.end > t - delayMs) return r.target;
  return undefined;
}

/** When after `t` the request of a fixed delay next falls (Infinity: not before a new target). */
export function nextFall(runs: readonly TargetRun[], t: number, delayMs: number): number {
  for (const r of runs) if (r.end + delayMs > t) return r.end + delayMs;
  return Number.POSITIVE_INFINITY;
}

function bucketStart(t: number): number {
  return Math.floor(t / BUCKET_MS) * BUCKET_MS;
}

function oldestBucket(t: number): number {
  return bucketStart(t) - (BUCKETS - 1) * BUCKET_MS;
}

/** Adds `rate` idle IPs over [from, to) to a candidate's total and buckets (a new object). */
function addIdle(d: ShadowDelay, from: number, to: number, rate: number): ShadowDelay {
  if (rate <= 0 || !(to > from)) return d;
  const oldest = oldestBucket(to);
  const buckets = d.buckets.filter((b) => b.start >= oldest).map((b) => ({ ...b }));
  for (let t = Math.max(from, oldest); t < to;) {
    const start = bucketStart(t);
    const end = Math.min(to, start + BUCKET_MS);
    let last = buckets[buckets.length - 1];
    if (last?.start !== start) {
      last = { start, idle: 0 };
      buckets.push(last);
    }
    last.idle += (rate * (end - t)) / 1000;
    t = end;
  }
  return { ...d, idle: d.idle + (rate * (to - from)) / 1000, buckets };
}

/** One candidate over [from, to) at constant demand: its request falls as runs leave its window. */
function advanceDelay(
  d: ShadowDelay,
  runs: readonly TargetRun[],
  demand: number,
  from: number,
  to: number,
): ShadowDelay {
  const delayMs = d.seconds * 1000;
  let k = runs.findIndex((r) => r.end + delayMs > from);
  if (k < 0) return d;
  let next = d;
  let t = from;
  for (;;) {
    const run = runs[k] as TargetRun;
    const until = Math.min(to, run.end + delayMs);
    next = addIdle(next, t, until, Math.max(0, run.target - demand));
    // A fall at `to` itself is counted here (the next span starts past it).
    if (run.end + delayMs > to || k + 1 >= runs.length) break;
    const lower = runs[k + 1] as TargetRun;
    // A release: its write and the write that clears the released ids.
    next = {
      ...next,
      writes: next.writes + 2,
      churn: next.churn + Math.max(0, run.target - lower.target),
    };
    t = until;
    k += 1;
  }
  return next;
}

/** The shadows integrated up to `to` (ms); a new object. Only live spans are counted. */
export function advanceShadows(s: Shadows, to: number): Shadows {
  const from = s.at;
  if (from === undefined || !(to > from)) return from === undefined ? { ...s, at: to } : s;
  const delays = s.live
    ? s.delays.map((d) => advanceDelay(d, s.runs, s.demand, from, to))
    : s.delays;
  // Runs that left the longest candidate's window matter no more.
  const horizon = to - longest(s);
  const runs = s.runs.filter((r) => r.end > horizon);
  return { ...s, at: to, delays, runs };
}

/** The shadows after one more observation. */
export function observeShadows(
  s: Shadows,
  o: Observation,
  budget: number,
  allowed?: Allowance,
): Shadows {
  const advanced = advanceShadows(s, o.at);
  const live = o.allocated !== undefined && Number.isFinite(o.allocated);
  const current = advanced.runs[advanced.runs.length - 1];
  let runs = advanced.runs;
  if (current?.target !== o.target) {
    runs = runs.map((r) => (r.end === Number.POSITIVE_INFINITY ? { ...r, end: o.at } : r));
    while (runs.length > 0 && (runs[runs.length - 1] as TargetRun).target <= o.target) {
      runs = runs.slice(0, -1);
    }
    runs = [...runs, { start: o.at, end: Number.POSITIVE_INFINITY, target: o.target }];
  }
  const delays =
    live && advanced.live
      ? advanced.delays.map((d) => {
          const before = shadowRequest(advanced.runs, o.at, d.seconds * 1000);
          const after = shadowRequest(runs, o.at, d.seconds * 1000) as number;
          if (before === undefined || before === after) return d;
          return {
            ...d,
            writes: d.writes + (after > before ? 1 : 2),
            churn: d.churn + Math.abs(after - before),
          };
        })
      : advanced.delays;
  const next: Shadows = { ...advanced, runs, delays, demand: o.demand, live };
  return { ...next, following: chooseDelay(next, budget, next.following, allowed) };
}

/** A candidate's idle IP-seconds in its buckets from the one starting at `since` on. */
function idleSince(d: ShadowDelay, since: number): number {
  return d.buckets.reduce((sum, b) => (b.start >= since ? sum + b.idle : sum), 0);
}

/** What a candidate held idle beyond the budget x CNS v2's over its pace's buckets (IP-seconds). */
export function beyondBudget(d: ShadowDelay, pace: Pace): number {
  return idleSince(d, pace.since) - pace.budget * pace.cnsIdle;
}

/** A candidate's idle IP-seconds in the window ending at `now`. */
export function windowIdle(d: ShadowDelay, now: number): number {
  return idleSince(d, oldestBucket(now));
}

/**
 * Whether a candidate's idle fits within `ratio` x CNS v2's (the idle
 * account's when the allowance names it, else the 0 s candidate's), since
 * start and over the window (one ratio for both, or each its own), and,
 * when the allowance has a pace, whether the budget left pays for its pace.
 */
export function fits(s: Shadows, d: ShadowDelay, ratio: number | Allowance): boolean {
  const base = s.delays.find((x) => x.seconds === 0);
  if (base === undefined || d.seconds === 0) return true;
  const now = s.at ?? 0;
  const r: Allowance = typeof ratio === 'number' ? { total: ratio, window: ratio } : ratio;
  const cns = r.cns ?? { total: base.idle, window: windowIdle(base, now) };
  if (r.pace !== undefined && beyondBudget(d, r.pace) > r.pace.budgetLeft) {
    return false;
  }
  return d.idle <= r.total * cns.total && windowIdle(d, now) <= r.window * cns.window;
}

/**
 * The delay to follow: the current one while it fits within the allowance
 * (the budget when none is given); a longer one only when it fits with
 * FIT_MARGIN of the allowance's headroom to spare; else the longest that
 * fits with that margin (0: CNS v2). A budget below 1 follows 0.
 */
export function chooseDelay(
  s: Shadows,
  budget: number,
  following: number,
  allowed: Allowance = { total: budget, window: budget },
): number {
  if (!(budget >= 1)) return 0;
  const current = s.delays.find((d) => d.seconds === following);
  const strict = {
    ...allowed,
    total: takeUpRatio(allowed.total),
    window: takeUpRatio(allowed.window),
  };
  let best = current !== undefined && fits(s, current, allowed) ? following : 0;
  for (const d of s.delays) {
    if (d.seconds > best && fits(s, d, strict)) best = d.seconds;
  }
  return best;
}
