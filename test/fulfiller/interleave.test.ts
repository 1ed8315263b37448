// The interleaving explorer (test/fulfiller/interleave/; README "High
// availability"): two fulfillers in one process over the local API server, a
// seeded scheduler of watch delays and cuts per replica, held, lost and 5xx-
// after-apply writes, Lease handovers, Nodes deleted and re-registered, NNCs
// deleted; after every step no address is on two NNCs and no quarantined one
// on another node's NNC; once the faults stop, every NNC converges.
// `make test` runs the fixed fixtures and the random seeds 1 to 300: about
// 40 s (0.13 s a seed, measured as two runs of 5,000 seeds side by side on
// the 2-core machine, 655 s and 658 s). `make interleave-long` runs
// 10,000 (INTERLEAVE_SEEDS); INTERLEAVE_FIRST_SEED starts elsewhere;
// INTERLEAVE_DEBUG=1 prints every step.
import { expect } from 'chai';
import { explore, REVIEW_CASE } from './interleave/explorer.ts';

/** Seeds once failing, with what their run showed. */
const FOUND: Array<[number, string]> = [
  [
    1149,
    'a stale NNC deleted under a re-registered Node is not restored onto addresses another NNC holds',
  ],
  [
    3708,
    'an NNC recreated while a replica looked away does not get back addresses another NNC holds',
  ],
  [4323, 'a restore never writes addresses another NNC holds'],
  [563, "a deleted Node's addresses are kept in the ledger before the quarantine write, not after"],
  [39, "a Node known only from a term's fresh list and gone from a watch's re-list is deleted"],
  [115, "a watch's re-list at its list resourceVersion shows which Nodes were deleted"],
];

/** Random seeds in `make test`: about 40 s of them (see above). */
const TEST_SEEDS = 300;
const SEEDS = Number(process.env.INTERLEAVE_SEEDS ?? TEST_SEEDS);
const FIRST = Number(process.env.INTERLEAVE_FIRST_SEED ?? 1);

describe('fulfiller: interleavings of two replicas over the local API server', function () {
  this.timeout(0);

  it("the review's case (the first fixture): the standby leads with its NNC watch down", async () => {
    expect(await explore(0, 0, REVIEW_CASE)).to.equal(undefined);
  });

  // Seeds the random sweep found failing, kept as fixtures (README "High availability").
  for (const [seed, what] of FOUND) {
    it(`seed ${seed}: ${what}`, async () => {
      expect(await explore(seed)).to.equal(undefined);
    });
  }

  it(`${SEEDS || 'no'} seeded runs from seed ${FIRST} (INTERLEAVE_SEEDS; make interleave-long): no violation`, async function () {
    if (!(SEEDS > 0)) this.skip();
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
