// `--idle-budget`: auto's promise, checked the way `make bench` and `make
// explore-sim` check it (src/sim/promise-check.ts), on generated demand
// (src/sim/traces/generated.ts) through the serial control plane at the
// CIDR and the Azure backend's timings: each trace runs through CNS v2 and
// through auto on the product's own simulate path, and auto's idle
// IP-seconds stay within the budget times CNS v2's (1 % slack), with no more
// writes or churn and a pod wait p99 at most 0.5 s worse. A fixed set of
// seeds (the first of the sweep's draw: every budget at both timings, four
// times), so this cannot fail by chance; `make explore-sim` runs 6,000.
import { expect } from 'chai';
import { autoPolicy } from '../../src/scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../../src/scaling/policies/budget/idle-budget.ts';
import { cnsV2Policy } from '../../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../../src/scaling/policies/policy.ts';
import { churn } from '../../src/sim/compare.ts';
import { timingLabel, type FulfilTiming } from '../../src/sim/fulfil-timing.ts';
import {
  checkPromise,
  generatedCheck,
  PROMISE_SCALER,
  PROMISE_TIMINGS,
} from '../../src/sim/promise-check.ts';
import { runSimulation } from '../../src/sim/simulate.ts';
import { BUILT_IN_TRACES } from '../../src/sim/trace.ts';
import { familyTrace } from '../../src/sim/traces/families.ts';
import { generatedTrace } from '../../src/sim/traces/generated.ts';

// Seeds 1-40, and seeds the wide sweep once broke and that hold since
// (docs/results/auto-budget.md): on idle at budget 1 (526, 5116) and at 1.2
// (1167), where the account's CNS v2 ran ahead of the control plane's
// first round; on churn and wait (2237) and on churn (910), holds begun
// while CNS v2's control plane was busy.
const SEEDS = [...Array.from({ length: 40 }, (_, i) => i + 1), 526, 910, 1167, 2237, 5116];

describe('sim: auto keeps its idle budget on generated demand (serial control plane)', function () {
  this.timeout(60_000);

  for (const seed of SEEDS) {
    const c = generatedCheck(seed);
    it(`seed ${seed} at ${c.budget}, ${timingLabel(c.timing)}: idle <= budget x CNS v2 (1 %), writes and churn <= CNS v2, wait p99 <= CNS v2 + 0.5 s`, async () => {
      const o = await checkPromise(c);
      const { auto: a, cns } = o;
      expect(a.idleIpSeconds, 'idle').to.be.at.most(c.budget * cns.idleIpSeconds * 1.01);
      expect(a.nncWrites, 'writes').to.be.at.most(cns.nncWrites);
      expect(churn(a), 'churn').to.be.at.most(churn(cns));
      expect(a.podWaitP99Seconds, 'wait p99').to.be.at.most(cns.podWaitP99Seconds + 0.5);
      // The live account is the measure: the idle IP-seconds the summary integrates.
      expect(o.account?.held).to.be.closeTo(a.idleIpSeconds, 1);
    });
  }
});

describe("sim: bench rows (and a held-out one) that broke the promise at Azure's timing", function () {
  this.timeout(120_000);

  // bursts-1 at 2: the round begun on a burst's first rise read one batch
  // too few; demand passed it within the round, and 24 pods waited for a
  // second round (113.6 s p99 against CNS v2's 112.8 s). A rise in a burst
  // now reaches a batch further (src/scaling/policies/budget/burst-reach.ts).
  // job-waves-2h at 1.2 and 1.5: a hold let go when the target fell, while
  // CNS v2's control plane was still busy with a round: the pool released
  // 48 IPs and took them back each wave where CNS v2 moved 16 (4,944 IPs of
  // churn against 4,816). A hold now begins when CNS v2's release would.
  // batch-jobs-3h at 1.5 (broken once holds began with CNS v2's release):
  // the guard let a hold go while the pool's round was under way, and the
  // release, begun at that round's end, held the next job back by a round.
  const rows = [
    { trace: familyTrace('bursts', 1), budget: 2 },
    // Held out: half a batch in 1.5 s began the burst (115.9 s against 115.3 s).
    { trace: familyTrace('bursts', 3), budget: 1.5 },
    { trace: BUILT_IN_TRACES['batch-jobs-3h']!(), budget: 1.5 },
    { trace: BUILT_IN_TRACES['job-waves-2h']!(), budget: 1.2 },
    { trace: BUILT_IN_TRACES['job-waves-2h']!(), budget: 1.5 },
  ];
  for (const { trace, budget } of rows) {
    it(`${trace.name} at ${budget}: idle, writes, churn and pod wait p99 as promised`, async () => {
      const o = await checkPromise({ trace, budget, timing: 'azure' });
      expect(o.broken).to.deep.equal([]);
      expect(churn(o.auto), 'churn').to.be.at.most(churn(o.cns));
      expect(o.auto.podWaitP99Seconds).to.be.at.most(o.cns.podWaitP99Seconds + 0.5);
    });
  }
});

describe('sim: the idle account against CNS v2 on the serial control plane', function () {
  this.timeout(60_000);

  const run = (seed: number, timing: FulfilTiming, policy: AnyPolicy) =>
    runSimulation({
      trace: generatedTrace(seed, { maxRepeats: 10 }),
      scaler: PROMISE_SCALER,
      releaseDelaySeconds: 0,
      policy,
      fulfilTiming: timing,
      timingSeed: seed,
    });

  for (const timing of PROMISE_TIMINGS) {
    it(`at budget 1 auto is CNS v2: the same run, write for write (${timingLabel(timing)})`, async () => {
      for (const seed of [1, 2, 3, 526, 5116]) {
        const a = await run(seed, timing, withIdleBudget(autoPolicy(), 1));
        const c = await run(seed, timing, cnsV2Policy());
        expect(a.summary, `seed ${seed}`).to.deep.equal(c.summary);
      }
    });

    it(`when the pool is CNS v2, the account's CNS v2 holds what it held (${timingLabel(timing)})`, async () => {
      // 1167 and 4366 were 5 % and 12 % off before CNS v2 was put in step
      // with the pool at the first round measured.
      for (const seed of [1, 2, 3, 4, 5, 1167, 4366]) {
        const r = await run(seed, timing, withIdleBudget(cnsV2Policy(), 1));
        const held = r.summary.idleIpSeconds;
        expect(r.account?.cnsV2IdleIpSeconds, `seed ${seed}`).to.be.closeTo(held, held * 0.005);
      }
    });
  }
});
