// The pool history's prune against a model: rows older than the window go,
// then all but the newest `maxRows` by (at, insertion order). Rows can share
// an `at` (observations a millisecond apart or less), so ties are where a cut
// can go wrong.
import { expect } from 'chai';
import fc from 'fast-check';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';

interface Row {
  at: number;
  demand: number;
}

function modelPrune(rows: readonly Row[], beforeMs: number, maxRows: number): Row[] {
  const inWindow = rows.filter((r) => r.at >= beforeMs);
  // Stable sort: rows with the same `at` keep their insertion order.
  const byAge = [...inWindow].sort((a, b) => a.at - b.at);
  return byAge.slice(Math.max(0, byAge.length - maxRows));
}

describe('ipstore/pool-history prune (property)', () => {
  it('keeps exactly the newest rows within the window, ties broken by insertion order', () => {
    const rowArb = fc.record({ at: fc.integer({ min: 0, max: 12 }), demand: fc.nat(1000) });
    fc.assert(
      fc.property(
        fc.array(fc.array(rowArb, { maxLength: 12 }), { maxLength: 5 }),
        fc.integer({ min: 0, max: 14 }),
        fc.integer({ min: 0, max: 40 }),
        (batches, beforeMs, maxRows) => {
          const store = openIpStore({ memory: true });
          try {
            const h = store.poolHistory();
            for (const b of batches) h.append(b.map((r) => ({ ...r, target: 16 })));
            const all = batches.flat();
            const kept = modelPrune(all, beforeMs, maxRows);
            const dropped = h.prune(beforeMs, maxRows);
            expect(dropped).to.equal(all.length - kept.length);
            expect(h.load(0).map((o) => ({ at: o.at, demand: o.demand }))).to.deep.equal(kept);
            expect(h.prune(beforeMs, maxRows)).to.equal(0);
          } finally {
            store.close();
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
