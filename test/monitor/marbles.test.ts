// Timing of the monitor proven with marble diagrams: gating, tick, the write
// window, coalescing, backoff (+ Retry-After) and scale-down damping wake-ups.
import { expect } from 'chai';
import fc from 'fast-check';
import { map, of, Subject, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { SpecWriteError } from '../../src/monitor/ports.ts';
import { PoolMonitor, type PoolMonitorOptions } from '../../src/monitor/pool-monitor.ts';
import type { OutcomeKind, ReconcileOutcome } from '../../src/monitor/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { captureLogger, FakeStore, FakeWriter, makeNnc } from './fakes.ts';
import { MemoryPoolStore } from './memory-store.ts';

const LETTER: Record<OutcomeKind, string> = {
  scaled: 's',
  corrected: 'c',
  'at-target': 'a',
  deferred: 'd',
  throttled: 't',
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

  describe('the write window: every demand change seen at once, writes spaced 500 ms', () => {
    const writesOf = (w: FakeWriter): number[][] =>
      w.writes.map((x) => [x.at, x.spec.requestedIPCount]);

    it('an isolated change is written at once', () => {
      const ts = scheduler();
      ts.run(({ hot, cold, expectObservable }) => {
        const { monitor, writer } = build(ts);
        // 5 pods at 0 (request 16 is right), 20 at 1000, 40 at 1600: each written when seen.
        expectObservable(kinds(monitor.outcomes$), '^ 2000ms !').toBe('a 999ms s 599ms s');
        monitor.start({
          demand$: hot('a 999ms b 599ms c', { a: 5, b: 20, c: 40 }),
          exhausted$: cold('f', { f: false }),
          nnc$: cold('n', { n: NNC16 }),
        });
        ts.flush();
        expect(writesOf(writer)).to.deep.equal([
          [1000, 32],
          [1600, 48],
        ]);
      });
    });

    it('the pod that crosses a batch boundary is written at once, whatever came just before it', () => {
      const ts = scheduler();
      ts.run(({ hot, cold, expectObservable }) => {
        const { monitor, writer } = build(ts);
        // 5..9 pods within 4 ms after a quiet second: the 9th crosses 16 → 32.
        expectObservable(kinds(monitor.outcomes$), '^ 2000ms !').toBe('a 999ms aaas');
        monitor.start({
          demand$: hot('a 999ms bcde', { a: 5, b: 6, c: 7, d: 8, e: 9 }),
          exhausted$: cold('f', { f: false }),
          nnc$: cold('n', { n: NNC16 }),
        });
        ts.flush();
        expect(writesOf(writer)).to.deep.equal([[1003, 32]]);
      });
    });

    it('a burst is at most two writes, the second at the end of the window with the latest state', () => {
      const ts = scheduler();
      ts.run(({ hot, cold, expectObservable }) => {
        const { monitor, writer } = build(ts);
        // 20 at 0 is written; 40, 60, 70 follow within 30 ms: one held write at 500 carries 70.
        expectObservable(kinds(monitor.outcomes$), '^ 2000ms !').toBe('s 9ms t 489ms s');
        monitor.start({
          demand$: hot('a 9ms b 9ms c 9ms d', { a: 20, b: 40, c: 60, d: 70 }),
          exhausted$: cold('f', { f: false }),
          nnc$: cold('n', { n: NNC16 }),
        });
        ts.flush();
        expect(writesOf(writer)).to.deep.equal([
          [0, 32],
          [500, 80],
        ]);
        expect(monitor.snapshot().request).to.equal(80);
      });
    });

    it('a burst that ends where it began writes nothing more', () => {
      const ts = scheduler();
      ts.run(({ hot, cold, expectObservable }) => {
        const { monitor, writer } = build(ts);
        expectObservable(kinds(monitor.outcomes$), '^ 2000ms !').toBe('s 9ms t 489ms a');
        monitor.start({
          demand$: hot('a 9ms b 9ms c', { a: 20, b: 40, c: 20 }),
          exhausted$: cold('f', { f: false }),
          nnc$: cold('n', { n: NNC16 }),
        });
        ts.flush();
        expect(writesOf(writer)).to.deep.equal([[0, 32]]);
      });
    });

    it('under continuous churn: at most one write per 500 ms, and the last state is written', () => {
      fc.assert(
        fc.property(
          // Up to 30 changes 1-300 ms apart: all within the 10 s the monitor runs.
          fc.array(fc.tuple(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 0, max: 120 })), {
            minLength: 1,
            maxLength: 30,
          }),
          (steps) => {
            const ts = scheduler();
            let writer: FakeWriter | undefined;
            let last = 0;
            ts.run(() => {
              const built = build(ts, { tickMs: 1_000_000 });
              writer = built.writer;
              const demand$ = new Subject<number>();
              let t = 0;
              for (const [gap, demand] of steps) {
                t += gap;
                ts.schedule(() => demand$.next(demand), t);
              }
              last = steps[steps.length - 1]?.[1] ?? 0;
              built.monitor.start({ demand$, exhausted$: of(false), nnc$: of(NNC16) });
            });
            const at = (writer as FakeWriter).writes.map((w) => w.at);
            at.forEach((x, i) => i > 0 && expect(x - (at[i - 1] as number)).to.be.at.least(500));
            const final = (writer as FakeWriter).applied?.requestedIPCount ?? 16;
            expect(final).to.equal(Math.min(250, 16 * Math.ceil(0.5 + last / 16)));
          },
        ),
        { numRuns: 60 },
      );
    });
  });

  it('runs one reconcile at a time; inputs meanwhile coalesce into one re-run with the latest state', () => {
    const ts = scheduler();
    ts.run(({ hot, cold, expectObservable }) => {
      const { monitor, writer } = build(ts, { writeWindowMs: 0 });
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
        writeWindowMs: 0,
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
      const { monitor, writer } = build(ts, { writeWindowMs: 0, releaseDelayMs: 1000 }, mem);
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
