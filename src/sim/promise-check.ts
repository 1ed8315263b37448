// One check of the idle-budget promise (docs/decisions/0034): a trace run
// through CNS v2 and through `auto` at a budget, on the serial control plane
// at a backend's timing, and the figures that break the promise (frontier.ts
// `promiseBroken`). The wide sweep (bench/promise-sweep.ts, `make
// explore-sim`) and the property test in `make test`
// (test/sim/idle-budget.test.ts) draw their checks the same way, from a
// generated trace's seed.
import { autoPolicy } from '../scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../scaling/policies/budget/idle-budget.ts';
import { cnsV2Policy } from '../scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../scaling/policies/policy.ts';
import { promiseBroken } from './frontier.ts';
import type { FulfilTiming } from './fulfil-timing.ts';
import { runSimulation } from './simulate.ts';
import type { SimulationSummary } from './summary.ts';
import type { Trace } from './trace.ts';
import { generatedTrace } from './traces/generated.ts';

export const PROMISE_SCALER = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
export const PROMISE_BUDGETS: readonly number[] = [1, 1.2, 1.5, 2, 3];
export const PROMISE_TIMINGS: readonly FulfilTiming[] = ['cidr', 'azure'];
/** The generated traces' shape: a pattern repeated at most 10 times (a few minutes to an hour). */
export const PROMISE_SHAPE = { maxRepeats: 10 };

export interface PromiseCheck {
  trace: Trace;
  budget: number;
  timing: FulfilTiming;
  /** How long one draw of the control plane's speed holds (ms). */
  speedSpanMs?: number;
  timingSeed?: number;
}

export interface PromiseOutcome {
  broken: string[];
  auto: SimulationSummary;
  cns: SimulationSummary;
  /** auto's own account's idle IP-seconds and its CNS v2's, at the end. */
  account?: { held: number; cns: number };
}

/**
 * The generated trace of `seed` and the budget and timing it is checked at:
 * seed i runs budget (i - 1) mod 5 at timing (i - 1) / 5 mod 2, the
 * control plane's speed drawn from the seed too.
 */
export function generatedCheck(
  seed: number,
  budgets: readonly number[] = PROMISE_BUDGETS,
  timings: readonly FulfilTiming[] = PROMISE_TIMINGS,
): PromiseCheck {
  const i = seed - 1;
  return {
    trace: generatedTrace(seed, PROMISE_SHAPE),
    budget: budgets[i % budgets.length]!,
    timing: timings[Math.floor(i / budgets.length) % timings.length]!,
    timingSeed: seed,
  };
}

export async function checkPromise(c: PromiseCheck): Promise<PromiseOutcome> {
  const run = (policy: AnyPolicy) =>
    runSimulation({
      trace: c.trace,
      scaler: PROMISE_SCALER,
      releaseDelaySeconds: 0,
      policy,
      fulfilTiming: c.timing,
      ...(c.speedSpanMs !== undefined ? { speedSpanMs: c.speedSpanMs } : {}),
      ...(c.timingSeed !== undefined ? { timingSeed: c.timingSeed } : {}),
    });
  const cns = (await run(cnsV2Policy())).summary;
  const result = await run(withIdleBudget(autoPolicy(), c.budget));
  const a = result.account;
  return {
    broken: promiseBroken(c.budget, result.summary, cns),
    auto: result.summary,
    cns,
    ...(a !== undefined
      ? { account: { held: a.heldIdleIpSeconds, cns: a.cnsV2IdleIpSeconds } }
      : {}),
  };
}
