// `auto` against the fixed-delay frontier (docs/decisions/0034), the small
// version of bench/auto-budget.ts: the promise on generated traces of every
// family (a property), and the writes bound on a few small traces: auto at
// the budget makes at most 10 % more writes and churn than the best fixed
// delay whose idle fits the budget (or 2 writes / 32 IPs more). The full
// sweep (every built-in trace, whole-length families, three budgets) is the
// bench's.
import { expect } from 'chai';
import fc from 'fast-check';
import { autoPolicy } from '../../src/scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../../src/scaling/policies/budget/idle-budget.ts';
import { fixedDelayPolicy } from '../../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../../src/scaling/policies/policy.ts';
import { frontierVerdict, promiseBroken } from '../../src/sim/frontier.ts';
import { runSimulation } from '../../src/sim/simulate.ts';
import type { SimulationSummary } from '../../src/sim/summary.ts';
import type { Trace } from '../../src/sim/trace.ts';
import { FAMILIES, familyTrace } from '../../src/sim/traces/families.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

async function run(trace: Trace, policy: AnyPolicy): Promise<SimulationSummary> {
  return (
    await runSimulation({ trace, scaler, releaseDelaySeconds: 0, policy, fulfilDelaySeconds: 2 })
  ).summary;
}

describe('sim: auto spends its idle budget as the best fitting fixed delay would', function () {
  this.timeout(120_000);

  it('keeps the promise on generated traces of every family (1/24 of their length)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FAMILIES),
        fc.integer({ min: 1, max: 10_000 }),
        fc.constantFrom(1.2, 1.5, 2),
        async (family, seed, budget) => {
          const trace = familyTrace(family, seed, 1 / 24);
          const cns = await run(trace, fixedDelayPolicy(0));
          const auto = await run(trace, withIdleBudget(autoPolicy(), budget));
          expect(promiseBroken(budget, auto, cns), trace.description).to.deep.equal([]);
        },
      ),
      { numRuns: 8 },
    );
  });

  for (const [family, seed, scale] of [
    ['poisson-exp', 3, 1 / 2],
    ['poisson-pareto', 2, 1 / 4],
  ] as const) {
    it(`${family}-${seed} at ${scale} of its length: auto's writes within 10 % of the best fitting delay's`, async () => {
      const trace = familyTrace(family, seed, scale);
      const fixed = new Map<number, SimulationSummary>();
      for (const d of [0, 30, 120, 300, 600, 1200]) {
        fixed.set(d, await run(trace, fixedDelayPolicy(d * 1000)));
      }
      const auto = await run(trace, withIdleBudget(autoPolicy(), 1.5));
      const v = frontierVerdict(1.5, auto, fixed);
      expect(v.promiseBroken, 'promise').to.deep.equal([]);
      expect(v.frontierMissed, JSON.stringify(v)).to.deep.equal([]);
    });
  }
});
