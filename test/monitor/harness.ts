// Runs a PoolMonitor inside TestScheduler.run with fake ports, so a whole
// scenario (inputs, tick, writes, backoff, damping) plays out in virtual time.
import { expect } from 'chai';
import { Subject, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CaptureTransport } from '../../src/log/capture.ts';
import { MemoryPoolStore } from './memory-store.ts';
import { PoolMonitor, type PoolMonitorOptions } from '../../src/monitor/pool-monitor.ts';
import type { MonitorEvent, ReconcileOutcome } from '../../src/monitor/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { captureLogger, FakeStore, FakeWriter } from './fakes.ts';

export interface Harness {
  ts: TestScheduler;
  monitor: PoolMonitor;
  store: FakeStore;
  writer: FakeWriter;
  capture: CaptureTransport;
  outcomes: (ReconcileOutcome & { t: number })[];
  events: MonitorEvent[];
  demand: Subject<number>;
  exhausted: Subject<boolean>;
  nnc: Subject<NodeNetworkConfig>;
  /** The store changed outside the monitor. */
  storeChanged: Subject<void>;
  /** Schedules `fn` at virtual time `t`. */
  at(t: number, fn: () => void): void;
}

export interface HarnessOptions extends Partial<
  Omit<PoolMonitorOptions, 'store' | 'writer' | 'logger' | 'scheduler'>
> {
  mem?: MemoryPoolStore;
  /** Virtual time at which the monitor is stopped (ends the run). */
  stopAt?: number;
  inputs?: (h: Harness) => {
    demand$?: Observable<number>;
    exhausted$?: Observable<boolean>;
    nnc$?: Observable<NodeNetworkConfig>;
  };
}

/** Builds the harness, lets `setup` schedule inputs, runs to `stopAt`. */
export function runScenario(options: HarnessOptions, setup: (h: Harness) => void): Harness {
  const ts = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  let harness: Harness | undefined;
  ts.run(() => {
    const store = new FakeStore(options.mem ?? new MemoryPoolStore());
    const writer = new FakeWriter(ts);
    const { logger, capture } = captureLogger();
    const { mem: _m, stopAt, inputs, ...rest } = options;
    const monitor = new PoolMonitor({
      store,
      writer,
      logger,
      scheduler: ts,
      random: () => 0.5,
      ...rest,
    });
    const h: Harness = {
      ts,
      monitor,
      store,
      writer,
      capture,
      outcomes: [],
      events: [],
      demand: new Subject<number>(),
      exhausted: new Subject<boolean>(),
      nnc: new Subject<NodeNetworkConfig>(),
      storeChanged: new Subject<void>(),
      at: (t, fn) => void ts.schedule(fn, t),
    };
    harness = h;
    monitor.outcomes$.subscribe((o) => h.outcomes.push({ ...o, t: ts.now() }));
    monitor.events$.subscribe((e) => h.events.push(e));
    const custom = inputs?.(h) ?? {};
    setup(h);
    monitor.start({
      demand$: custom.demand$ ?? h.demand,
      exhausted$: custom.exhausted$ ?? h.exhausted,
      nnc$: custom.nnc$ ?? h.nnc,
      storeChanged$: h.storeChanged,
    });
    h.at(stopAt ?? 10, () => void monitor.stop());
  });
  return harness as Harness;
}
