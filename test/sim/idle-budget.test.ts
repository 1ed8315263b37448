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
import { churn } from '../../src/sim/compare.ts';
import { timingLabel } from '../../src/sim/fulfil-timing.ts';
import { checkPromise, generatedCheck } from '../../src/sim/promise-check.ts';

const SEEDS = Array.from({ length: 40 }, (_, i) => i + 1);

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
