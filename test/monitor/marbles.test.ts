// Timing of the monitor proven with marble diagrams: gating, tick, demand
// throttle, coalescing, backoff (+ Retry-After) and scale-down damping.
import { expect } from 'chai';
import { map, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { MemoryPoolStore } from '../../src/monitor/memory-store.ts';
import { SpecWriteError } from '../../src/monitor/ports.ts';
import { PoolMonitor, type PoolMonitorOptions } from '../../src/monitor/pool-monitor.ts';
import type { OutcomeKind, ReconcileOutcome } from '../../src/monitor/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { captureLogger, FakeStore, FakeWriter, makeNnc } from './fakes.ts';

const LETTER: Record<OutcomeKind, string> = {
  scaled: 's',
  corrected: 'c',
  'at-target': 'a',
  deferred: 'd',
  'dry-run': 'r',
  failed: 'f',
};

function kinds(o$: Observable<ReconcileOutcome>): Observable<string> {
  return o$.pipe(map((o) => LETTER[o.kind]));
}

interface Setup {
  monitor: PoolMonitor;
  writer: FakeWriter;
  store: FakeStore;
  mem: MemoryPoolStore;
}

function build(
  ts: TestScheduler,
  opts: Partial<PoolMonitorOptions> = {},
  mem = new MemoryPoolStore(),
): Setup {
  const store = new FakeStore(mem);
  const writer = new FakeWriter(ts);
  const { logger } = captureLogger();
  const monitor = new PoolMonitor({
    store,
    writer,
    logger,
    scheduler: ts,
    tickMs: 1_000_000,
    random: () => 0.5,
    ...opts,
  });
  // The tick runs forever: stop the monitor so the virtual run can end.
  ts.schedule(() => void monitor.stop(), 10_000);
  return { monitor, writer, store, mem };
}

function scheduler(): TestScheduler {
  return new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
}

const NNC16 = makeNnc({ request: 16, generation: 1 });
const NNC32 = (mem: MemoryPoolStore): NodeNetworkConfig =>
  makeNnc({ request: 32, ids: [...mem.ips.keys()], generation: 1 });

describe('monitor: marbles', () => {
  it('does nothing until demand, exhaustion and a valid NNC have all arrived', () => {
    const ts = scheduler();
    ts.run(({ hot, expectObservable }) => {
      const { monitor, writer } = build(ts);
      const demand$ = hot<number>('a 9ms -', { a: 20 });
      const exhausted$ = hot<boolean>('-- 3ms f', { f: false });
      const nnc$ = hot<NodeNetworkConfig>('- 4ms b 2ms n', {
        b: makeNnc({ containers: false }),
        n: NNC16,
      });
      monitor.start({ demand$, exhausted$, nnc$ });
      // frame 5: NNC without dynamic container is ignored; frame 8: valid NNC.
      expectObservable(kinds(monitor.outcomes$), '^ 20ms !').toBe('8ms s');
      ts.flush();
      expect(writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([[8, 32]]);
    });
  });

  it('reconciles on the tick even without input changes', () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const { monitor } = build(ts, { tickMs: 100 });
      expectObservable(kinds(monitor.outcomes$), '^ 350ms !').toBe('a 99ms a 99ms a 99ms a');
      monitor.start({
        demand$: cold('a', { a: 5 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
    });
  });

  it('throttles demand to once per 500 ms, leading and trailing, ending on the latest', () => {
    const ts = scheduler();
    ts.run(({ hot, cold, expectObservable }) => {
      const { monitor } = build(ts);
      expectObservable(monitor.outcomes$.pipe(map((o) => o.demand)), '^ 2000ms !').toBe(
        'a 499ms c 499ms d',
        { a: 1, c: 3, d: 4 },
      );
      monitor.start({
        demand$: hot('a 99ms b 99ms c 599ms d', { a: 1, b: 2, c: 3, d: 4 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
    });
  });

  it('runs one reconcile at a time; inputs meanwhile coalesce into one re-run with the latest state', () => {
    const ts = scheduler();
    ts.run(({ hot, cold, expectObservable }) => {
      const { monitor, writer } = build(ts, { demandThrottleMs: 0 });
      writer.latencyMs = 50;
      expectObservable(kinds(monitor.outcomes$), '^ 300ms !').toBe('50ms s 49ms s');
      monitor.start({
        demand$: hot('a 9ms b 9ms c 9ms d', { a: 20, b: 40, c: 60, d: 70 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
      ts.flush();
      // The second write carries the latest demand (70 → 80), not 40 or 60.
      expect(writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([
        [0, 32],
        [50, 80],
      ]);
    });
  });

  it('backs off exponentially after failed writes', () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const { monitor, writer } = build(ts, {
        backoff: { initialMs: 100, factor: 2, jitter: 0.5 },
      });
      writer.script.push(new Error('a'), new Error('b'), new Error('c'));
      // random 0.5 cancels the jitter: 100, 200, 400.
      expectObservable(kinds(monitor.outcomes$), '^ 1000ms !').toBe('f 99ms f 199ms f 399ms s');
      monitor.start({
        demand$: cold('a', { a: 20 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
    });
  });

  it('spreads retries with jitter from the injected random source', () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const { monitor, writer } = build(ts, {
        backoff: { initialMs: 100, factor: 2, jitter: 0.5 },
        random: () => 0,
      });
      writer.script.push(new Error('a'), new Error('b'));
      expectObservable(kinds(monitor.outcomes$), '^ 1000ms !').toBe('f 49ms f 99ms s');
      monitor.start({
        demand$: cold('a', { a: 20 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
    });
  });

  it("honours a 429's Retry-After over a shorter backoff", () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const { monitor, writer } = build(ts, { backoff: { initialMs: 100 } });
      writer.script.push(new SpecWriteError('too many requests', 429, 2));
      expectObservable(kinds(monitor.outcomes$), '^ 3000ms !').toBe('f 1999ms s');
      monitor.start({
        demand$: cold('a', { a: 20 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
    });
  });

  it('while backing off, inputs only update the state; the retry uses the latest', () => {
    const ts = scheduler();
    ts.run(({ hot, cold, expectObservable }) => {
      const { monitor, writer } = build(ts, {
        demandThrottleMs: 0,
        backoff: { initialMs: 100, jitter: 0 },
      });
      writer.script.push(new Error('down'));
      expectObservable(kinds(monitor.outcomes$), '^ 500ms !').toBe('f 99ms s');
      monitor.start({
        demand$: hot('a 29ms b 29ms c', { a: 20, b: 40, c: 50 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC16 }),
      });
      ts.flush();
      expect(writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([
        [0, 32],
        [100, 64],
      ]);
    });
  });

  it('damps scale-down by releaseDelayMs but scales up at once', () => {
    const ts = scheduler();
    ts.run(({ hot, cold, expectObservable }) => {
      const mem = new MemoryPoolStore();
      mem.add(32, 'Available');
      const { monitor, writer } = build(ts, { demandThrottleMs: 0, releaseDelayMs: 1000 }, mem);
      expectObservable(kinds(monitor.outcomes$), '^ 3000ms !').toBe(
        'd 999ms s 499ms s 99ms d 999ms s',
      );
      monitor.start({
        // 5 pods (target 16 < request 32) from 0; 40 pods (target 48) at 1500; 5 again at 1600.
        demand$: hot('a 1499ms b 99ms c', { a: 5, b: 40, c: 5 }),
        exhausted$: cold('f', { f: false }),
        nnc$: cold('n', { n: NNC32(mem) }),
      });
      ts.flush();
      expect(writer.writes.map((w) => [w.at, w.spec.requestedIPCount])).to.deep.equal([
        [1000, 16],
        [1500, 48],
        [2600, 16],
      ]);
    });
  });
});
