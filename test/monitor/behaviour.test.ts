// One test per rule of docs/design/scaling.md the monitor owns, with in-memory fakes.
import { expect } from 'chai';
import { asyncScheduler, of, Subject } from 'rxjs';
import { MemoryPoolStore } from './memory-store.ts';
import { PoolMonitor } from '../../src/monitor/pool-monitor.ts';
import type { DesiredSpec, NncSpecWriter } from '../../src/monitor/ports.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { captureLogger, makeNnc } from './fakes.ts';
import { runScenario } from './harness.ts';

function pool(available: number, pending = 0): MemoryPoolStore {
  const mem = new MemoryPoolStore();
  mem.add(pending, 'PendingRelease');
  mem.add(available, 'Available');
  return mem;
}

describe('monitor: behaviour', () => {
  it('clears ids of spec.ipsNotInUse that left the status with one write, request unchanged', () => {
    const mem = pool(16);
    const ids = [...mem.ips.keys()];
    const h = runScenario({ mem, stopAt: 100 }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(
          makeNnc({ request: 16, ids, ipsNotInUse: ['gone-1', 'gone-2'], generation: 3 }),
        );
      });
      // The echo of our own write comes back through the watch.
      hh.at(20, () => hh.nnc.next(makeNnc({ request: 16, ids, generation: hh.writer.generation })));
    });
    expect(h.writer.writes.map((w) => w.spec)).to.deep.equal([
      { requestedIPCount: 16, ipsNotInUse: [] },
    ]);
    expect(h.outcomes.map((o) => o.kind)).to.deep.equal(['corrected', 'at-target']);
  });

  it('does not write the stale ids even if the store still lists them', () => {
    const mem = pool(16, 2);
    const [p1, p2] = [...mem.ips.keys()];
    const ids = [...mem.ips.keys()].filter((id) => id !== p2);
    const h = runScenario({ mem }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(
          makeNnc({ request: 16, ids, ipsNotInUse: [p1 as string, p2 as string], generation: 1 }),
        );
      });
    });
    expect(h.writer.writes.map((w) => w.spec)).to.deep.equal([
      { requestedIPCount: 16, ipsNotInUse: [p1] },
    ]);
  });

  // Found by the 10,000-object fuzz (FUZZ_SEED=1: 2,064 requests in the 3
  // quiet seconds after it): the store refused a foreign status, so it still
  // held PendingRelease ids the status no longer backs. Each id the spec held
  // was stale and dropped (write []), each id it did not hold was written
  // again (write the ids): the sidecar flipped the spec between the two for
  // good, a write and an Event every few milliseconds.
  it('PendingRelease ids the status does not back: no spec flip-flop, at most one write', () => {
    const mem = pool(16, 2);
    const [p1, p2] = [...mem.ips.keys()];
    const ids = [...mem.ips.keys()].filter((id) => id !== p1 && id !== p2);
    const h = runScenario({ mem, stopAt: 200 }, (hh) => {
      let last: string[] = [];
      const echo = () => {
        const spec = hh.writer.writes.at(-1)?.spec;
        last = spec ? [...spec.ipsNotInUse] : last;
        hh.nnc.next(
          makeNnc({ request: 16, ids, ipsNotInUse: last, generation: hh.writer.generation }),
        );
      };
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, ids, ipsNotInUse: [], generation: 1 }));
      });
      for (let t = 20; t <= 180; t += 20) hh.at(t, echo); // every write echoes back
    });
    expect(h.writer.writes.length, JSON.stringify(h.writer.writes)).to.be.at.most(1);
    for (const w of h.writer.writes) expect(w.spec.ipsNotInUse).to.deep.equal([]);
  });

  it('corrects an out-of-band spec edit, and ignores its own echo (generation)', () => {
    const mem = pool(16);
    const ids = [...mem.ips.keys()];
    const h = runScenario({ mem, stopAt: 100 }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, ids, generation: 4 }));
      });
      hh.at(10, () => {
        hh.writer.generation = 5;
        hh.nnc.next(makeNnc({ request: 100, ids, generation: 5 })); // someone edited the spec
      });
      hh.at(20, () => hh.nnc.next(makeNnc({ request: 16, ids, generation: hh.writer.generation })));
      hh.at(30, () => hh.nnc.next(makeNnc({ request: 100, ids, generation: 5 }))); // old view, late
    });
    expect(h.writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([[10, 16]]);
    expect(h.outcomes.map((o) => o.kind)).to.deep.equal([
      'at-target',
      'corrected',
      'at-target',
      'at-target',
    ]);
  });

  it('without generations, compares with the last spec written', () => {
    const mem = pool(16);
    const ids = [...mem.ips.keys()];
    const h = runScenario({ mem, stopAt: 100 }, (hh) => {
      hh.writer.returnGeneration = false;
      hh.at(0, () => {
        hh.demand.next(20);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, ids }));
      });
      hh.at(10, () => hh.nnc.next(makeNnc({ request: 32, ids }))); // echo
      hh.at(20, () => hh.nnc.next(makeNnc({ request: 7, ids }))); // edit
    });
    expect(h.writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([
      [0, 32],
      [20, 32],
    ]);
  });

  it('seeds the request from the first valid NNC only', () => {
    const h = runScenario({ stopAt: 100 }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, generation: 1 }));
      });
      hh.at(10, () => {
        hh.writer.generation = 1;
        hh.nnc.next(makeNnc({ request: 16, generation: 1 }));
      });
    });
    expect(h.monitor.snapshot().request).to.equal(16);
    expect(h.writer.writes).to.have.length(0);
    expect(h.events.filter((e) => e.type === 'ready')).to.have.length(1);
  });

  it('an NNC deleted and recreated (new uid) is written again within one reconcile', () => {
    // Review defect: the sidecar wrote request 32 at generation 2; the NNC is
    // then deleted and recreated (request 0, generation 1, new uid). The
    // monitor must not take the new object for an old view of its own write.
    const h = runScenario({ stopAt: 1_000 }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(20);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, generation: 1, uid: 'uid-a' }));
      });
      hh.at(10, () => hh.nnc.next(makeNnc({ request: 32, generation: 2, uid: 'uid-a' }))); // echo
      hh.at(600, () => hh.nnc.next(makeNnc({ request: 0, generation: 1, uid: 'uid-b' })));
    });
    expect(h.writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([
      [0, 32],
      [600, 32],
    ]);
    expect(h.outcomes.map((o) => [o.t, o.kind, o.from])).to.deep.equal([
      [0, 'scaled', 16],
      [10, 'at-target', 32],
      [600, 'scaled', 0],
    ]);
    expect(h.events.map((e) => e.type)).to.include('nnc-recreated');
    expect(h.monitor.snapshot().request).to.equal(32);
  });

  it('asks for demand + 1 while the subnet is exhausted', () => {
    const h = runScenario({}, (hh) => {
      hh.at(0, () => {
        hh.demand.next(20);
        hh.exhausted.next(true);
        hh.nnc.next(makeNnc({ request: 16, generation: 1 }));
      });
    });
    expect(h.writer.writes.map((w) => w.spec.requestedIPCount)).to.deep.equal([21]);
    expect(h.outcomes[0]?.scaler).to.deep.equal({ batch: 1, buffer: 1, max: 250 });
  });

  it('dry-run decides and logs but never marks or writes', () => {
    const mem = pool(32);
    const h = runScenario({ mem, dryRun: true }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 32, ids: [...mem.ips.keys()], generation: 1 }));
      });
    });
    expect(h.outcomes.map((o) => [o.kind, o.delta, o.from, o.to])).to.deep.equal([
      ['dry-run', -16, 32, 32],
    ]);
    expect(mem.markCalls).to.deep.equal([]);
    expect(h.writer.writes).to.deep.equal([]);
    expect(h.capture.find('scaling pool')[0]?.delta).to.equal(-16);
  });

  it('a failed mark writes nothing, reports mark-failed and retries with backoff', () => {
    const mem = pool(32);
    const h = runScenario(
      { mem, stopAt: 1_500, backoff: { initialMs: 1_000, jitter: 0 } },
      (hh) => {
        hh.store.markError = new Error('disk full');
        hh.at(0, () => {
          hh.demand.next(5);
          hh.exhausted.next(false);
          hh.nnc.next(makeNnc({ request: 32, ids: [...mem.ips.keys()], generation: 1 }));
        });
      },
    );
    expect(h.writer.writes).to.deep.equal([]);
    expect(h.outcomes.map((o) => [o.t, o.kind, o.stage])).to.deep.equal([
      [0, 'failed', 'mark'],
      [1_000, 'failed', 'mark'],
    ]);
    expect(h.events.filter((e) => e.type === 'mark-failed')).to.have.length(2);
    expect(h.monitor.snapshot().request).to.equal(32);
  });

  it('writes the marked ids when the target rises again after a failed write', () => {
    const mem = pool(32);
    const h = runScenario(
      { mem, stopAt: 2_000, writeWindowMs: 0, backoff: { initialMs: 1_000, jitter: 0 } },
      (hh) => {
        hh.writer.script.push(new Error('conflict'));
        hh.at(0, () => {
          hh.demand.next(5);
          hh.exhausted.next(false);
          hh.nnc.next(makeNnc({ request: 32, ids: [...mem.ips.keys()], generation: 1 }));
        });
        hh.at(500, () => hh.demand.next(20)); // target back to 32
      },
    );
    expect(mem.markCalls).to.deep.equal([16]);
    expect(
      h.writer.writes.map((w) => [w.at, w.spec.requestedIPCount, w.spec.ipsNotInUse.length]),
    ).to.deep.equal([
      [0, 16, 16],
      [1_000, 32, 16],
    ]);
    expect(h.outcomes.map((o) => o.kind)).to.deep.equal(['failed', 'corrected']);
  });

  it('waits for every input, and for an NNC with a scaler and a dynamic container', () => {
    const h = runScenario({ stopAt: 100 }, (hh) => {
      hh.at(0, () => hh.demand.next(5));
      hh.at(1, () => hh.nnc.next(makeNnc({ request: 8, generation: 1 })));
      hh.at(2, () =>
        hh.nnc.next({ metadata: { name: 'node-1' }, status: { networkContainers: [] } }),
      );
      hh.at(3, () => hh.exhausted.next(false));
    });
    expect(h.outcomes.map((o) => [o.t, o.kind])).to.deep.equal([[3, 'scaled']]);
    expect(h.events.map((e) => e.type)).to.include('nnc-invalid');
    expect(h.monitor.snapshot().ready).to.equal(true);
  });

  it('ignores invalid demand and exhaustion values', () => {
    const h = runScenario({ stopAt: 2_000 }, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, generation: 1 }));
      });
      hh.at(600, () => hh.demand.next(Number.NaN));
      hh.at(1_200, () => hh.demand.next(-3));
      hh.at(1_300, () => hh.exhausted.next('yes' as unknown as boolean));
    });
    expect(h.monitor.snapshot().demand).to.equal(5);
    expect(h.monitor.snapshot().exhausted).to.equal(false);
    expect(h.events.filter((e) => e.type === 'input-invalid')).to.have.length(3);
    expect(h.writer.writes).to.have.length(0);
  });

  it('reports bad scaler fields by name, as events and in the scaler update log', () => {
    const h = runScenario({}, (hh) => {
      hh.at(0, () => {
        hh.demand.next(5);
        hh.exhausted.next(false);
        hh.nnc.next(
          makeNnc({
            request: 16,
            generation: 1,
            scaler: { batchSize: 0, requestThresholdPercent: 50, maxIPCount: -1 },
          }),
        );
      });
    });
    const fields = h.events.flatMap((e) => (e.type === 'scaler-invalid' ? [e.field] : []));
    expect(fields).to.deep.equal(['maxIPCount', 'batchSize']);
    const log = h.capture.find('scaler update')[0];
    expect(log?.level).to.equal('warn');
    expect(JSON.stringify(log?.warnings)).to.contain('maxIPCount').and.to.contain('batchSize');
    expect(h.monitor.snapshot().scaler).to.deep.equal({ batch: 1, buffer: 0.5, max: 250 });
  });

  it('logs its decision with demand, batch, buffer, max, target, delta and request', () => {
    const mem = pool(32);
    const h = runScenario(
      { mem, stopAt: 2_000, writeWindowMs: 0, backoff: { jitter: 0 } },
      (hh) => {
        hh.at(0, () => {
          hh.demand.next(5);
          hh.exhausted.next(false);
          hh.nnc.next(makeNnc({ request: 32, ids: [...mem.ips.keys()], generation: 1 }));
        });
        hh.at(10, () => hh.demand.next(6)); // at target now
        hh.at(20, () => {
          hh.writer.script.push(new Error('api down'));
          hh.demand.next(30);
        });
      },
    );
    const calc = h.capture.find('calculated new request')[0];
    expect(calc).to.include({
      component: 'monitor',
      demand: 5,
      batch: 16,
      buffer: 0.5,
      max: 250,
      target: 16,
    });
    expect(h.capture.find('scaling pool')[0]).to.include({ delta: -16 });
    expect(h.capture.find('scaled pool')[0]).to.include({ request: 16 });
    expect(h.capture.find('already at target')).to.have.length(1);
    expect(h.capture.find('demand update').map((r) => r.demand)).to.deep.equal([5, 6, 30]);
    expect(h.capture.find('exhaustion update')[0]).to.include({ exhausted: false });
    const failed = h.capture.find('reconcile failed')[0];
    expect(failed?.level).to.equal('error');
    expect(String(failed?.error)).to.contain('api down');
  });

  it('snapshot reports demand, scaler, target, request and the last reconcile', () => {
    const h = runScenario({}, (hh) => {
      hh.at(0, () => {
        hh.demand.next(20);
        hh.exhausted.next(false);
        hh.nnc.next(makeNnc({ request: 16, generation: 1 }));
      });
    });
    const s = h.monitor.snapshot();
    expect(s).to.deep.include({
      ready: true,
      demand: 20,
      exhausted: false,
      target: 32,
      request: 32,
      writes: 1,
    });
    expect(s.lastReconcile).to.deep.equal({ at: 0, outcome: 'scaled', delta: 16 });
  });

  it('runs with real promises and stop() waits for the reconcile in flight', async () => {
    const mem = pool(0);
    let release: (() => void) | undefined;
    const written: DesiredSpec[] = [];
    const writer: NncSpecWriter = {
      writeSpec: (spec) =>
        new Promise((resolve) => {
          written.push(spec);
          release = () => resolve({ generation: 2 });
        }),
    };
    const { logger } = captureLogger();
    const monitor = new PoolMonitor({ store: mem, writer, logger, scheduler: asyncScheduler });
    const nnc$ = new Subject<NodeNetworkConfig>();
    monitor.start({ demand$: of(20), exhausted$: of(false), nnc$ });
    nnc$.next(makeNnc({ request: 16, generation: 1 }));
    for (let i = 0; i < 20 && release === undefined; i += 1)
      await new Promise((r) => setImmediate(r));
    expect(written.map((s) => s.requestedIPCount)).to.deep.equal([32]);
    let stopped = false;
    const stopping = monitor.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).to.equal(false);
    release?.();
    await stopping;
    expect(stopped).to.equal(true);
    expect(monitor.snapshot().request).to.equal(32);
  });
});
