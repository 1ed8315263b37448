// A reconcile reads the store once (one view, one transaction in the SQLite
// store), whatever it then does: nothing, mark and write, or fail to read.
import { expect } from 'chai';
import { MemoryPoolStore } from './memory-store.ts';
import { makeNnc } from './fakes.ts';
import { runScenario } from './harness.ts';

describe('monitor: one store read per reconcile', () => {
  it('reads once per reconcile through a scale-up, a scale-down that marks, and at target', () => {
    const mem = new MemoryPoolStore();
    mem.add(32, 'Available');
    const ids = [...mem.ips.keys()];
    const h = runScenario({ mem, stopAt: 5000 }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(20);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 32, ids, generation: 1 }));
      });
      hh.at(2000, () => hh.demand.next(1));
    });
    const kinds = h.outcomes.map((o) => o.kind);
    expect(kinds).to.include('scaled');
    expect(h.outcomes.some((o) => o.marked > 0)).to.equal(true);
    expect(h.store.views).to.equal(h.outcomes.length);
  });

  it('a read that fails is one read, one failed outcome at stage read, and nothing written', () => {
    const h = runScenario({ stopAt: 100 }, (hh) => {
      hh.store.readError = new Error('disk gone');
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, generation: 1 }));
      });
    });
    const first = h.outcomes[0];
    expect(first).to.include({ kind: 'failed', stage: 'read', marked: 0, wrote: false });
    expect(first?.error).to.equal('failed to read the IP store: disk gone');
    expect(first?.reason).to.equal(undefined);
    expect(h.store.views).to.equal(h.outcomes.length);
    expect(h.writer.writes).to.deep.equal([]);
  });
});
