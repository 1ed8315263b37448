// The sidecar as one object, built over the open store in the order its data
// flows (docs/design/sidecar.md#the-data-path): the inputs (the node's
// watches, started last, once the node API listens), where what it finds is
// told (metrics, Events on the NNC), the store's followers, the NNC intake
// (each NNC syncs the store, then reaches the monitor), the pool monitor and
// its NNC writer, the schedule signal. run.ts serves it (the node API, the
// metrics listener) and then wires the watches (wire-watches.ts). Each part
// that must be stopped pushes its stop step; readiness is derived from the
// parts that own its state, never set.
import type { KubeConfig } from '@kubernetes/client-node';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Logger } from '../log/logger.ts';
import { MetricsCollector } from '../metrics/collector.ts';
import { buildMonitor, type MonitorTuning, type PoolPart } from './build-monitor.ts';
import { NncIntake } from './nnc-intake.ts';
import { NodeWatches } from './node-watches.ts';
import { eventsToNnc, type RecordEvent } from './nnc-events.ts';
import { familyPools, type FamilyPool } from './families.ts';
import type { ClusterSubnetState } from '../nnc/types.ts';
import type { SidecarOptions } from './options.ts';
import { PodWaitTracker } from './pod-wait.ts';
import {
  scheduleSignalPart,
  type ScheduleSignalPart,
  type SignalTuning,
} from './schedule-signal-wire.ts';
import type { StopSteps } from './stop-steps.ts';
import { followStore, type StoreFollowers } from './store-followers.ts';
import { whyNotReady, type ReadinessState, type WaitReason } from './waiting.ts';

export interface Sidecar {
  readonly options: SidecarOptions;
  readonly root: Logger;
  readonly log: Logger;
  readonly store: NodeIpStore;
  /** 1. The inputs: the node's pods, its NNC, the ClusterSubnetStates. */
  readonly watches: NodeWatches;
  /** 2. Where it is told: metrics, pods waiting for an address, Events on the NNC. */
  readonly metrics: MetricsCollector;
  readonly podWaits: PodWaitTracker;
  readonly record: RecordEvent;
  /** 3. The store following the NNC and the pods. */
  readonly followers: StoreFollowers;
  /** 4. Each NNC: the store follows it, then the monitor gets it. */
  readonly intake: NncIntake;
  /** 5. The pool monitor, its NNC writer and what it learned before a restart. */
  readonly pool: PoolPart;
  /** 6. The schedule signal: its taint on the Node. */
  readonly signal: ScheduleSignalPart;
  /** The pool per address family now: subnet, exhaustion, counts (families.ts). */
  families(): FamilyPool[];
  /** What readiness is derived from, now. */
  readiness(): ReadinessState;
  /** Why the sidecar is not ready now (undefined: it is). */
  whyNotReady(): WaitReason | undefined;
}

export interface SidecarTuning extends MonitorTuning, SignalTuning {
  /** Informer restart backoff. */
  watchBackoff?: BackoffOptions;
}

export function buildSidecar(
  input: {
    options: SidecarOptions;
    tuning: SidecarTuning;
    root: Logger;
    log: Logger;
    kc: KubeConfig;
    store: NodeIpStore;
  },
  stops: StopSteps,
): Sidecar {
  const { options, tuning, root, log, kc, store } = input;
  const watches = new NodeWatches({ options, kc, root, backoff: tuning.watchBackoff });
  const metrics = new MetricsCollector({ defaultMetrics: tuning.defaultMetrics ?? true });
  const podWaits = new PodWaitTracker(metrics);
  // Events go to the NNC as the intake last took it: the intake is built
  // below, from the followers that report through these Events.
  const record = eventsToNnc(
    {
      options,
      root,
      kc,
      enabled: tuning.events !== false && !options.dryRun,
      nnc: () => intake.current(),
    },
    stops,
  );
  const followers = followStore({ options, log, store, record, metrics }, stops);
  const intake = new NncIntake({
    namespace: options.namespace,
    nodeName: options.nodeName,
    follower: followers.nnc,
    pods: followers.pods,
  });
  const pool = buildMonitor({ options, tuning, root, log, kc, store, nnc: intake }, stops);
  const readiness = (): ReadinessState => ({
    stopping: stops.running,
    monitorReady: pool.monitor.snapshot().ready,
    watches: watches.informers,
    lastWatchError: watches.lastError(),
  });
  const families = (): FamilyPool[] =>
    familyPools({
      nnc: intake.current(),
      css: (watches.informers?.css.list() ?? []) as ClusterSubnetState[],
      mode: options.subnetState,
      counts: store.countsByFamily(),
    });
  const signal = scheduleSignalPart(
    {
      options,
      kc,
      log,
      store,
      monitor: pool.monitor,
      pods: followers.pods,
      storeChanged: followers.storeChanged,
      nnc: intake,
      readiness,
      families,
      metrics,
      record,
      tuning,
    },
    stops,
  );
  return {
    options,
    root,
    log,
    store,
    watches,
    metrics,
    podWaits,
    record,
    followers,
    intake,
    pool,
    signal,
    families,
    readiness,
    whyNotReady: () => whyNotReady(readiness(), options.namespace, options.nodeName),
  };
}
