// The reconcile table of the CNS IPAM v2 monitor, ported as data and run
// through the whole PoolMonitor with fake ports.
import { expect } from 'chai';
import { of } from 'rxjs';
import { MemoryPoolStore } from '../../src/monitor/memory-store.ts';
import { makeNnc } from './fakes.ts';
import { runScenario } from './harness.ts';

interface Case {
  name: string;
  demand: number;
  request: number;
  pendingRelease?: number;
  available?: number;
  markFails?: boolean;
  writeFails?: boolean;
  wantRequest: number;
  wantMarkCalls: number[];
  wantWrites: number;
  wantWriteRequest?: number;
  wantPendingRelease?: number;
  wantFailed?: boolean;
}

// Scaler of every case: batch 16, buffer 0.5 (50 %), max 250.
const table: Case[] = [
  { name: 'no delta', demand: 5, request: 16, wantRequest: 16, wantMarkCalls: [], wantWrites: 0 },
  {
    name: 'fail to release',
    demand: 6,
    request: 32,
    available: 32,
    markFails: true,
    wantRequest: 32,
    wantMarkCalls: [16],
    wantWrites: 0,
    wantFailed: true,
  },
  {
    name: 'fail to patch',
    demand: 20,
    request: 16,
    writeFails: true,
    wantRequest: 16,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 32,
    wantPendingRelease: 0,
    wantFailed: true,
  },
  {
    name: 'single scale up',
    demand: 15,
    request: 16,
    wantRequest: 32,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 32,
    wantPendingRelease: 0,
  },
  {
    name: 'big scale up',
    demand: 75,
    request: 16,
    wantRequest: 96,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 96,
    wantPendingRelease: 0,
  },
  {
    name: 'capped scale up',
    demand: 300,
    request: 16,
    wantRequest: 250,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 250,
    wantPendingRelease: 0,
  },
  {
    name: 'single scale down',
    demand: 5,
    request: 32,
    available: 32,
    wantRequest: 16,
    wantMarkCalls: [16],
    wantWrites: 1,
    wantWriteRequest: 16,
    wantPendingRelease: 16,
  },
  {
    name: 'big scale down',
    demand: 5,
    request: 128,
    available: 128,
    wantRequest: 16,
    wantMarkCalls: [112],
    wantWrites: 1,
    wantWriteRequest: 16,
    wantPendingRelease: 112,
  },
  {
    name: 'capped scale down',
    demand: 0,
    request: 32,
    available: 32,
    wantRequest: 16,
    wantMarkCalls: [16],
    wantWrites: 1,
    wantWriteRequest: 16,
    wantPendingRelease: 16,
  },
  {
    name: 'scale up unskew',
    demand: 15,
    request: 3,
    wantRequest: 32,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 32,
    wantPendingRelease: 0,
  },
  {
    name: 'scale down unskew',
    demand: 5,
    request: 37,
    available: 37,
    wantRequest: 16,
    wantMarkCalls: [21],
    wantWrites: 1,
    wantWriteRequest: 16,
    wantPendingRelease: 21,
  },
  {
    name: 'single scale up with pending release',
    demand: 20,
    request: 16,
    pendingRelease: 16,
    available: 16,
    wantRequest: 32,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 32,
    wantPendingRelease: 16,
  },
  {
    name: 'single scale down with pending release',
    demand: 5,
    request: 32,
    pendingRelease: 16,
    available: 32,
    wantRequest: 16,
    wantMarkCalls: [16],
    wantWrites: 1,
    wantWriteRequest: 16,
    wantPendingRelease: 32,
  },
  // CNS calls mark with 0 here; we skip the call, the effect is the same.
  {
    name: 'scale down with stale request and existing pending release',
    demand: 5,
    request: 48,
    pendingRelease: 16,
    available: 16,
    wantRequest: 16,
    wantMarkCalls: [],
    wantWrites: 1,
    wantWriteRequest: 16,
    wantPendingRelease: 16,
  },
];

describe('monitor: CNS reconcile table', () => {
  for (const tt of table) {
    it(tt.name, () => {
      const mem = new MemoryPoolStore();
      const pending = mem.add(tt.pendingRelease ?? 0, 'PendingRelease');
      mem.add(tt.available ?? 0, 'Available');
      const nnc = makeNnc({
        request: tt.request,
        ids: [...mem.ips.keys()],
        ipsNotInUse: pending,
        generation: 1,
      });
      const h = runScenario(
        { mem, inputs: () => ({ demand$: of(tt.demand), exhausted$: of(false), nnc$: of(nnc) }) },
        (hh) => {
          if (tt.markFails) hh.store.markError = new Error('failed to mark IPs pending release');
          if (tt.writeFails) hh.writer.script.push(new Error('failed to patch NNC spec'));
        },
      );
      expect(h.outcomes).to.have.length(1);
      expect(h.outcomes[0]?.kind === 'failed').to.equal(tt.wantFailed === true);
      expect(h.monitor.snapshot().request).to.equal(tt.wantRequest);
      expect(mem.markCalls).to.deep.equal(tt.wantMarkCalls);
      expect(h.writer.writes).to.have.length(tt.wantWrites);
      const last = h.writer.writes[h.writer.writes.length - 1];
      if (last !== undefined) {
        expect(last.spec.requestedIPCount).to.equal(tt.wantWriteRequest);
        expect(last.spec.ipsNotInUse).to.have.length(tt.wantPendingRelease ?? 0);
        expect(last.spec.ipsNotInUse).to.deep.equal(mem.pendingReleaseIdsSync());
      }
    });
  }

  it('retries a failed write without releasing twice', () => {
    const mem = new MemoryPoolStore();
    mem.add(32, 'Available');
    const nnc = makeNnc({ request: 32, ids: [...mem.ips.keys()], generation: 1 });
    const h = runScenario(
      {
        mem,
        stopAt: 5_000,
        backoff: { initialMs: 1_000, jitter: 0 },
        inputs: () => ({ demand$: of(5), exhausted$: of(false), nnc$: of(nnc) }),
      },
      (hh) => hh.writer.script.push(new Error('failed to patch NNC spec')),
    );
    expect(h.outcomes.map((o) => o.kind)).to.deep.equal(['failed', 'scaled']);
    expect(mem.markCalls).to.deep.equal([16]);
    expect(mem.count('PendingRelease')).to.equal(16);
    expect(
      h.writer.writes.map((w) => [w.at, w.spec.requestedIPCount, w.spec.ipsNotInUse.length]),
    ).to.deep.equal([
      [0, 16, 16],
      [1_000, 16, 16],
    ]);
    expect(h.monitor.snapshot().request).to.equal(16);
  });
});
