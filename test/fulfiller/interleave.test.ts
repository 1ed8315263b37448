// The interleaving explorer (issue 21 item 5, test/fulfiller/interleave/):
// two fulfillers in one process over the local API server, a seeded
// scheduler of watch delays and cuts per replica, held, lost and 5xx-after-
// apply writes, Lease handovers, Nodes deleted and re-registered, NNCs
// deleted; after every step no address is on two NNCs and no quarantined one
// on another node's NNC; once the faults stop, every NNC converges.
// INTERLEAVE_SEEDS (default 150) and INTERLEAVE_FIRST_SEED pick the seeds;
// INTERLEAVE_DEBUG=1 prints every step; `make interleave-long` runs 10,000.
import { expect } from 'chai';
import { explore, REVIEW_CASE } from './interleave/explorer.ts';

const SEEDS = Number(process.env.INTERLEAVE_SEEDS ?? 150);
const FIRST = Number(process.env.INTERLEAVE_FIRST_SEED ?? 1);

describe('fulfiller: interleavings of two replicas over the local API server (issue 21)', function () {
  this.timeout(0);

  it("the review's case (the first fixture): the standby leads with its NNC watch down", async () => {
    expect(await explore(0, 0, REVIEW_CASE)).to.equal(undefined);
  });

  it(`${SEEDS} seeded runs from seed ${FIRST}: no violation`, async () => {
    const failures: string[] = [];
    const started = Date.now();
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const found = await explore(seed);
      if (found) failures.push(found);
    }
    if (SEEDS >= 1000)
      console.log(
        `interleave: ${SEEDS} seeds, ${failures.length} violations, ${Date.now() - started} ms`,
      );
    expect(failures).to.deep.equal([]);
  });
});
