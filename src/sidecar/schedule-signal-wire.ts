// The schedule signal in the sidecar (sidecar.ts): built before the node API
// (whose /debug/pool shows it and whose assignments poke it), started once
// the watches run. What it looks at: whether the pool is usable (the
// watches listed, the NNC usable, the monitor ready, the store following
// the pods) and, once it is, the monitor's demand, exhaustion and cap and
// the store's counts. Its changes are logged, counted on /metrics and told
// as an Event on the node's NNC. With --schedule-signal false it only
// removes a taint an earlier run left; with --dry-run it decides and says
// so, and never touches the Node.
import type { KubeConfig } from '@kubernetes/client-node';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Observable } from 'rxjs';
import type { NodeIpStore, StateCounts } from '../ipstore/types.ts';
import type { EventDetails } from '../kube/events.ts';
import { errorText } from '../log/error-text.ts';
import type { Logger } from '../log/logger.ts';
import type { PodFollower } from '../ipstore/follow-pods.ts';
import type { MetricsCollector } from '../metrics/collector.ts';
import type { PoolMonitor } from '../monitor/pool-monitor.ts';
import type { NncSeen } from './nnc-intake.ts';
import type { RecordEvent } from './nnc-events.ts';
import type { SidecarOptions } from './options.ts';
import { dryRunNodeTaints, nodeTaints, type NodeTaints } from './schedule-signal-node.ts';
import {
  ScheduleSignalLoop,
  type ScheduleSignalStatus,
  type SignalObservation,
} from './schedule-signal-run.ts';
import {
  capacityOf,
  SIGNAL_REASONS,
  TAINT_KEY,
  wantOf,
  type SignalChange,
  type Usability,
} from './schedule-signal.ts';
import type { StopSteps } from './stop-steps.ts';
import { nncReadiness, type ReadinessState } from './waiting.ts';

export interface ScheduleSignalPart {
  /** Something changed in the pool: look soon. */
  poke(): void;
  /** /debug/pool's scheduleSignal. */
  status(): ScheduleSignalStatus | { enabled: false; taint: string };
  /** Once the watches run. */
  start(): void;
  /** The loop (only looking, without touching the Node, when the signal is off). */
  readonly loop: ScheduleSignalLoop;
}

export interface SignalTuning {
  /** Hysteresis (default 60 s) and the unprompted look's period (default 5 s): tests. */
  scheduleSignalHoldMs?: number;
  scheduleSignalCheckMs?: number;
}

/** Metrics: which reason keeps the node from attracting pods, and the changes. */
class SignalMetrics {
  readonly #signal: Gauge<'reason'>;
  readonly #changes: Counter<'to' | 'reason'>;
  readonly #canServe: Gauge;
  constructor(registry: Registry) {
    const registers = [registry];
    this.#signal = new Gauge({
      name: 'pool_monitor_schedule_signal',
      help: `1 while the node carries the NoSchedule taint ${TAINT_KEY}, by reason (not-ready, subnet-exhausted, max-ip-count).`,
      labelNames: ['reason'],
      registers,
    });
    for (const reason of SIGNAL_REASONS) this.#signal.set({ reason }, 0);
    this.#changes = new Counter({
      name: 'pool_monitor_schedule_signal_changes_total',
      help: 'Changes of the schedule signal on the Node: to tainted (reason) or cleared (ready, can-serve).',
      labelNames: ['to', 'reason'],
      registers,
    });
    this.#canServe = new Gauge({
      name: 'pool_monitor_schedule_signal_can_serve',
      help: 'Whether the pool can serve another pod now (1), cannot (0), or is not usable yet (-1).',
      registers,
    });
  }
  changed(c: SignalChange): void {
    this.#changes.inc({ to: c.to, reason: c.reason });
    for (const reason of SIGNAL_REASONS)
      this.#signal.set({ reason }, c.to === 'tainted' && c.reason === reason ? 1 : 0);
  }
  looked(o: SignalObservation): void {
    this.#canServe.set(
      o.want.kind === 'clear' ? 1 : o.want.kind === 'taint' && o.capacity ? 0 : -1,
    );
  }
}

export function changeEvent(c: SignalChange): EventDetails {
  if (c.to === 'tainted')
    return {
      type: c.reason === 'not-ready' ? 'Normal' : 'Warning',
      reason: 'NodeStoppedAttractingPods',
      message: `taint ${TAINT_KEY}=${c.reason}:NoSchedule set: ${c.why}`,
    };
  return {
    type: 'Normal',
    reason: 'NodeAttractsPods',
    message: `taint ${TAINT_KEY} removed (${c.reason}): ${c.why}`,
  };
}

export function scheduleSignalPart(
  input: {
    options: SidecarOptions;
    kc: KubeConfig;
    log: Logger;
    store: NodeIpStore;
    monitor: PoolMonitor;
    /** The store following the pods: its gate (no address before it has). */
    pods: PodFollower;
    /** Reclaimed IPs: look again. */
    storeChanged: Observable<void>;
    nnc: NncSeen;
    readiness: () => ReadinessState;
    /** The pool per address family: a node serves only when every family can. */
    families: () => readonly { name: string; counts: StateCounts; exhausted: boolean }[];
    metrics: MetricsCollector;
    record: RecordEvent;
    tuning: SignalTuning;
  },
  stops: StopSteps,
): ScheduleSignalPart {
  const { options, kc, store, monitor } = input;
  const log = input.log.child({ component: 'schedule-signal' });
  const node: NodeTaints = options.dryRun
    ? dryRunNodeTaints()
    : nodeTaints({ kc, name: options.nodeName });
  const off = options.scheduleSignal === false;
  const observe = (): SignalObservation => {
    const usability = usabilityOf(options, input.readiness(), input.pods, input.nnc);
    if (usability.kind !== 'usable') return { want: wantOf(usability, undefined) };
    const snap = monitor.snapshot();
    const capacity = capacityOf({
      demand: snap.demand ?? 0,
      exhausted: snap.exhausted === true,
      max: snap.scaler?.max ?? 250,
      counts: store.counts(),
      families: input.families(),
    });
    return { want: wantOf(usability, capacity), capacity };
  };
  if (off) {
    // Off: nothing on the Node; the pool is still looked at, for the history
    // the embedded report compares (whether pods waited where they could not be served).
    const watcher = new ScheduleSignalLoop({ node, observe, logger: log, observeOnly: true });
    return {
      poke: () => watcher.poke(),
      status: () => ({ enabled: false, taint: TAINT_KEY }),
      loop: watcher,
      start() {
        if (!options.dryRun) removeLeftover(node, log, stops);
        const subs = [
          monitor.outcomes$.subscribe(() => watcher.poke()),
          input.storeChanged.subscribe(() => watcher.poke()),
        ];
        watcher.start();
        stops.push('schedule signal watcher', async () => {
          for (const s of subs) s.unsubscribe();
          await watcher.stop();
        });
      },
    };
  }
  const metrics = new SignalMetrics(input.metrics.registry);
  const loop = new ScheduleSignalLoop({
    node,
    observe,
    logger: log,
    ...(input.tuning.scheduleSignalHoldMs !== undefined
      ? { holdMs: input.tuning.scheduleSignalHoldMs }
      : {}),
    ...(input.tuning.scheduleSignalCheckMs !== undefined
      ? { checkMs: input.tuning.scheduleSignalCheckMs }
      : {}),
    onChange: (c) => {
      metrics.changed(c);
      input.record(changeEvent(c));
    },
    onLook: (_s, o) => metrics.looked(o),
  });
  return {
    poke: () => loop.poke(),
    status: () => loop.status(),
    loop,
    start() {
      const subs = [
        monitor.outcomes$.subscribe(() => loop.poke()),
        input.storeChanged.subscribe(() => loop.poke()),
      ];
      loop.start();
      stops.push('schedule signal', async () => {
        for (const s of subs) s.unsubscribe();
        await loop.stop();
      });
    },
  };
}

/** Whether the pool is usable, not yet, or not known yet (the watches have not listed). */
function usabilityOf(
  options: SidecarOptions,
  readiness: ReadinessState,
  pods: PodFollower,
  nnc: NncSeen,
): Usability {
  const inf = readiness.watches;
  if (readiness.stopping) return { kind: 'unknown', why: 'stopping' };
  if (!inf || !(inf.pods.synced && inf.nnc.synced && inf.css.synced))
    return { kind: 'unknown', why: 'the watches have not listed yet' };
  if (readiness.monitorReady) {
    const gate = pods.notReady();
    return gate === undefined ? { kind: 'usable' } : { kind: 'unknown', why: gate };
  }
  const current = inf.nnc.list().find((o) => o.metadata?.name === options.nodeName);
  const r = nncReadiness(
    (current ?? nnc.current()) as Parameters<typeof nncReadiness>[0],
    options.namespace,
    options.nodeName,
  );
  if (r.kind === 'usable') return { kind: 'unknown', why: 'the store is following the NNC' };
  return { kind: 'not-usable', why: r.reason };
}

/** --schedule-signal false: a taint an earlier run left is removed, once. */
function removeLeftover(node: NodeTaints, log: Logger, stops: StopSteps): void {
  const done = (async () => {
    try {
      if ((await node.read()) === undefined) return;
      await node.write(undefined);
      log.info('schedule signal off: the taint an earlier run left is removed', {
        taint: TAINT_KEY,
      });
    } catch (err) {
      log.warn('schedule signal off: the taint an earlier run left could not be removed', {
        taint: TAINT_KEY,
        error: errorText(err),
      });
    }
  })();
  stops.push('schedule signal', () => done);
}
