// The sidecar's second start step (run.ts): everything that decides and
// records, built over the open store before anything listens or watches -
// metrics, Events to the node's NNC, the NNC writer, the pool monitor with
// what it learned before a restart (the pool history, through the store),
// the store following the NNC and the pods. Each part that must be stopped
// pushes its stop step.
import type { KubeConfig } from '@kubernetes/client-node';
import { Subject } from 'rxjs';
import { followNnc, type NncFollower } from '../ipstore/follow-nnc.ts';
import { followPods, type PodFollower } from '../ipstore/follow-pods.ts';
import { asPoolIpStore } from '../ipstore/pool-adapter.ts';
import type { PoolHistory } from '../ipstore/pool-history.ts';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { sidecarEventPrefix } from '../kube/event-names.ts';
import { createEventRecorder, noopEventRecorder } from '../kube/events.ts';
import type { EventDetails, InvolvedObject } from '../kube/events.ts';
import { errorText } from '../log/error-text.ts';
import type { Logger } from '../log/logger.ts';
import { MetricsCollector } from '../metrics/collector.ts';
import { LeakMetrics } from '../metrics/leaks.ts';
import { PoolMonitor } from '../monitor/pool-monitor.ts';
import { GROUP, NNC_KIND, NNC_VERSION, type NodeNetworkConfig } from '../nnc/types.ts';
import { parseCarried, type CarriedAccount } from '../scaling/policies/budget/carried.ts';
import type { Observation } from '../scaling/policies/policy.ts';
import { releasePolicy } from '../scaling/policies/release-delay.ts';
import { createAdvisor, type Advisor } from './advice.ts';
import { vanishedEvent } from './events.ts';
import { recordPoolHistory } from './history-recorder.ts';
import { LeakReporter } from './leaks.ts';
import { createNncWriter } from './nnc-writer.ts';
import { nncGoneReason } from './waiting.ts';
import { DEFAULT_LEAK_GRACE_SECONDS, type SidecarOptions } from './options.ts';
import { PodWaitTracker } from './pod-wait.ts';
import type { StopSteps } from './stop-steps.ts';

/** How far back the pool history is read at start (the policy's memory is bounded anyway). */
const HISTORY_LOAD_MS = 24 * 3600_000;

/** The node's NNC as last seen: Events go to it. */
export interface LastSeenNnc {
  /** The last usable one the store followed. */
  current?: NodeNetworkConfig;
  /** What the NNC watch's cache holds for this node now (undefined: none, or not listed yet). */
  listed?: NodeNetworkConfig;
}

export interface MonitorTuning {
  defaultMetrics?: boolean;
  events?: boolean;
  tickMs?: number;
  writeWindowMs?: number;
  writeBackoff?: Partial<BackoffOptions>;
  random?: () => number;
}

export interface MonitorPart {
  metrics: MetricsCollector;
  podWaits: PodWaitTracker;
  /** Records an Event on the node's NNC (nothing before one was seen). */
  record: (details: EventDetails | undefined) => void;
  monitor: PoolMonitor;
  advisor: Advisor | undefined;
  /** Observations loaded from the pool history at start. */
  learned: number;
  follower: NncFollower;
  pods: PodFollower;
  leaks: LeakReporter;
  /** Tells the monitor the store changed under it (reclaimed IPs). */
  storeChanged: Subject<void>;
}

export function buildMonitor(
  input: {
    options: SidecarOptions;
    tuning: MonitorTuning;
    root: Logger;
    log: Logger;
    kc: KubeConfig;
    store: NodeIpStore;
    nnc: LastSeenNnc;
  },
  stops: StopSteps,
): MonitorPart {
  const { options, tuning, root, log, kc, store, nnc } = input;
  const metrics = new MetricsCollector({ defaultMetrics: tuning.defaultMetrics ?? true });
  const podWaits = new PodWaitTracker(metrics);
  const record = eventsToNnc(input, tuning.events !== false && !options.dryRun, stops);
  const history = store.poolHistory();
  const learned = loadHistory(history, log);
  const carried = loadAccount(history, log);
  const monitor = new PoolMonitor({
    store: asPoolIpStore(store),
    writer: createNncWriter({
      kc,
      name: options.nodeName,
      namespace: options.namespace,
      observedIds: () => nnc.current?.spec?.ipsNotInUse,
      // Not while it is being deleted or gone after it was seen (the same
      // gate as the node API's, waiting.ts): its successor gets the spec.
      present: () =>
        nncGoneReason(
          nnc.listed,
          nnc.current !== undefined,
          options.namespace,
          options.nodeName,
        ) === undefined,
    }),
    logger: root,
    ...(tuning.tickMs !== undefined ? { tickMs: tuning.tickMs } : {}),
    ...(tuning.writeWindowMs !== undefined ? { writeWindowMs: tuning.writeWindowMs } : {}),
    ...(tuning.writeBackoff ? { backoff: tuning.writeBackoff } : {}),
    ...(tuning.random ? { random: tuning.random } : {}),
    policy: releasePolicy(options.releaseDelay, options.idleBudget, carried),
    history: learned,
    dryRun: options.dryRun,
  });
  const advisor = history
    ? createAdvisor({ history, scaler: () => monitor.snapshot().scaler, log })
    : undefined;
  const historyRecorder = history
    ? recordPoolHistory({
        history,
        observations$: monitor.observations$,
        log,
        // auto's idle account survives a restart (docs/decisions/0034).
        account: { record: history.account(), carry: () => monitor.damping()?.account?.carry },
      })
    : undefined;
  stops.push('pool history', () => {
    historyRecorder?.stop();
    advisor?.stop();
  });
  const followers = followStore(input, record, metrics, stops);
  return {
    metrics,
    podWaits,
    record,
    monitor,
    advisor,
    learned: learned.length,
    ...followers,
  };
}

/** What auto learned before a restart: the pool history in the node store. */
function loadHistory(history: PoolHistory | undefined, log: Logger): Observation[] {
  try {
    return history?.load(Date.now() - HISTORY_LOAD_MS) ?? [];
  } catch (err) {
    log.warn('pool history not loaded', { error: errorText(err) });
    return [];
  }
}

/** auto's idle account as saved before a restart; none when absent or unreadable. */
function loadAccount(history: PoolHistory | undefined, log: Logger): CarriedAccount | undefined {
  try {
    const saved = history?.account().load();
    if (saved === undefined) return undefined;
    const carried = parseCarried(saved.state);
    if (carried === undefined) log.warn('idle account in the store not readable: starting at zero');
    else log.info('idle account resumed', { savedAt: new Date(carried.savedAt).toISOString() });
    return carried;
  } catch (err) {
    log.warn('idle account not loaded', { error: errorText(err) });
    return undefined;
  }
}

/** Events go to the node's NNC as last seen; pending ones are awaited on stop. */
function eventsToNnc(
  input: { options: SidecarOptions; root: Logger; kc: KubeConfig; nnc: LastSeenNnc },
  enabled: boolean,
  stops: StopSteps,
): MonitorPart['record'] {
  const { options, root, kc, nnc } = input;
  const recorder = enabled
    ? createEventRecorder({
        kc,
        component: 'azure-cns',
        host: options.nodeName,
        namePrefix: sidecarEventPrefix(options.nodeName),
        logger: root.child({ component: 'events' }),
      })
    : noopEventRecorder;
  const pending = new Set<Promise<void>>();
  stops.push('events', () => Promise.all([...pending]));
  return (details) => {
    const current = nnc.current;
    if (details === undefined || current === undefined) return;
    const involved: InvolvedObject = {
      apiVersion: `${GROUP}/${NNC_VERSION}`,
      kind: NNC_KIND,
      name: options.nodeName,
      namespace: options.namespace,
      ...(current.metadata.uid ? { uid: current.metadata.uid } : {}),
    };
    const p = recorder.recordEvent(involved, details).finally(() => pending.delete(p));
    pending.add(p);
  };
}

/**
 * The store follows each valid NNC (before the monitor sees it) and the pods:
 * leaked IPs reclaimed, reported addresses adopted; no IP is handed out
 * before it has (the node API's gate).
 */
function followStore(
  input: { options: SidecarOptions; log: Logger; store: NodeIpStore },
  record: MonitorPart['record'],
  metrics: MetricsCollector,
  stops: StopSteps,
): Pick<MonitorPart, 'follower' | 'pods' | 'leaks' | 'storeChanged'> {
  const { options, log, store } = input;
  const follower = followNnc(store, {
    logger: log,
    notify: (notice) =>
      record(
        notice.type === 'assigned-vanished'
          ? vanishedEvent(notice.records)
          : { type: 'Warning', reason: 'InvalidNetworkContainers', message: notice.message },
      ),
  });
  const storeChanged = new Subject<void>();
  const leaks = new LeakReporter({
    logger: log,
    record,
    metrics: new LeakMetrics(metrics.registry),
  });
  const pods = followPods({
    store,
    nodeName: options.nodeName,
    graceMs: (options.leakGraceSeconds ?? DEFAULT_LEAK_GRACE_SECONDS) * 1000,
    logger: log,
    notify: (notice) => {
      leaks.notice(notice);
      // Reclaimed IPs can be marked now: the monitor decides again (a surplus, 0016).
      if (notice.type === 'reclaimed') storeChanged.next();
    },
  });
  stops.push('pod follower', () => {
    pods.stop();
    storeChanged.complete();
  });
  return { follower, pods, leaks, storeChanged };
}
