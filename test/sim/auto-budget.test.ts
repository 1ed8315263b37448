// `auto` against the fixed-delay frontier (docs/decisions/0034), the small
// version of bench/auto-budget.ts, on the serial control plane at the CIDR
// and the Azure backend's timings: the promise on generated traces of every
// family (a property, on a fixed seed so it cannot fail by chance), and the
// bound on a few small traces: auto at the budget makes at most 10 % more
// writes and churn than the best fixed delay that keeps the promise (or 2
// writes / 32 IPs more). The full sweep (every built-in trace, whole-length
// families, three budgets) is the bench's.
import { expect } from 'chai';
import fc from 'fast-check';
import { autoPolicy } from '../../src/scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../../src/scaling/policies/budget/idle-budget.ts';
import { fixedDelayPolicy } from '../../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../../src/scaling/policies/policy.ts';
import {
  frontierVerdict,
  peakIdleRatio,
  promiseBroken,
  promiseKeepingDelays,
} from '../../src/sim/frontier.ts';
import type { FulfilTiming } from '../../src/sim/fulfil-timing.ts';
import { runSimulation } from '../../src/sim/simulate.ts';
import { idleSoFar, type SimulationSummary } from '../../src/sim/summary.ts';
import type { Trace } from '../../src/sim/trace.ts';
import { FAMILIES, familyTrace } from '../../src/sim/traces/families.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

type Figures = SimulationSummary & { idleSoFar: number[] };

async function run(trace: Trace, policy: AnyPolicy, timing: FulfilTiming): Promise<Figures> {
  const { summary, samples } = await runSimulation({
    trace,
    scaler,
    releaseDelaySeconds: 0,
    policy,
    fulfilTiming: timing,
  });
  return { ...summary, idleSoFar: idleSoFar(samples, summary.simulatedSeconds) };
}

describe('sim: auto spends its idle budget as the best fitting fixed delay would', function () {
  this.timeout(120_000);

  it('keeps the promise on generated traces of every family (1/24 of their length)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FAMILIES),
        fc.integer({ min: 1, max: 10_000 }),
        fc.constantFrom(1.2, 1.5, 2),
        fc.constantFrom<FulfilTiming>('cidr', 'azure'),
        async (family, seed, budget, timing) => {
          const trace = familyTrace(family, seed, 1 / 24);
          const cns = await run(trace, fixedDelayPolicy(0), timing);
          const auto = await run(trace, withIdleBudget(autoPolicy(), budget), timing);
          expect(promiseBroken(budget, auto, cns), trace.description).to.deep.equal([]);
        },
      ),
      { numRuns: 8, seed: 57 },
    );
  });

  for (const [family, seed, scale, timing] of [
    ['poisson-exp', 3, 1, 'azure'],
    ['poisson-pareto', 2, 1 / 4, 'cidr'],
  ] as const) {
    it(`${family}-${seed} at ${scale} of its length, ${timing}: auto's writes and churn within 10 % of the best promise-keeping delay's`, async () => {
      const trace = familyTrace(family, seed, scale);
      const fixed = new Map<number, Figures>();
      for (const d of [0, 30, 120, 300, 600, 1200]) {
        fixed.set(d, await run(trace, fixedDelayPolicy(d * 1000), timing));
      }
      const cns = fixed.get(0)!;
      const peaks = new Map(
        [...fixed].map(([d, s]) => [d, peakIdleRatio(s.idleSoFar, cns.idleSoFar)]),
      );
      const auto = await run(trace, withIdleBudget(autoPolicy(), 1.5), timing);
      const v = frontierVerdict(1.5, auto, promiseKeepingDelays(1.5, fixed, peaks));
      expect(v.promiseBroken, 'promise').to.deep.equal([]);
      expect(v.frontierMissed, JSON.stringify(v)).to.deep.equal([]);
    });
  }
});
