// The sidecar's last start step (run.ts): the node's watches (pods, its NNC,
// the ClusterSubnetState) feed the store followers and the pool monitor; the
// monitor's outcomes and events feed the metrics and Events; the reason the
// sidecar is not ready yet is logged as it changes. Its stop steps run first.
import { filter, share, tap, type Subscription } from 'rxjs';
import type { NncFollower } from '../ipstore/follow-nnc.ts';
import type { PodFollower } from '../ipstore/follow-pods.ts';
import type { PodView } from '../ipstore/pod-plan.ts';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Logger } from '../log/logger.ts';
import { poolObservation } from '../metrics/observation.ts';
import type { PoolMonitor } from '../monitor/pool-monitor.ts';
import { dynamicContainers, type NodeNetworkConfig } from '../nnc/types.ts';
import type { LastSeenNnc, MonitorPart } from './build-monitor.ts';
import { monitorEvent, outcomeEvent } from './events.ts';
import { startNodeInformers, type NodeInformers } from './informers.ts';
import type { SidecarOptions } from './options.ts';
import type { PodLike } from './pod-wait.ts';
import type { StopSteps } from './stop-steps.ts';
import { nncReadiness, WaitNotice, waitReason, type WaitReason } from './waiting.ts';

/** Whether the sidecar is ready, and why not: what the health checks and the wait log say. */
export class Readiness {
  stopping = false;
  lastWatchError: string | undefined;
  /** Set once the watches run; until then the sidecar waits for them. */
  informers: NodeInformers | undefined;
  private readonly monitor: PoolMonitor;
  private readonly options: SidecarOptions;

  constructor(monitor: PoolMonitor, options: SidecarOptions) {
    this.monitor = monitor;
    this.options = options;
  }

  whyNot(): WaitReason | undefined {
    if (this.stopping) return { reason: 'stopping', say: false };
    if (this.monitor.snapshot().ready) return undefined;
    return waitReason(
      this.informers,
      this.lastWatchError,
      this.options.namespace,
      this.options.nodeName,
    );
  }
}

export interface WatchInput {
  options: SidecarOptions;
  root: Logger;
  log: Logger;
  kc: KubeConfig;
  store: NodeIpStore;
  nnc: LastSeenNnc;
  part: MonitorPart;
  readiness: Readiness;
  watchBackoff?: BackoffOptions;
  waitNoticeMs?: number;
}

export function wireWatches(input: WatchInput, stops: StopSteps): NodeInformers {
  const { options, root, kc, part, readiness } = input;
  const informers = startNodeInformers({
    kc,
    nodeName: options.nodeName,
    namespace: options.namespace,
    subnetState: options.subnetState,
    logger: root,
    ...(input.watchBackoff ? { backoff: input.watchBackoff } : {}),
  });
  readiness.informers = informers;
  const subs = [
    ...sayWhyWaiting(input, informers, stops),
    ...feedStoreAndMetrics(input, informers),
  ];
  part.monitor.start({
    demand$: informers.demand$,
    exhausted$: informers.exhausted$,
    nnc$: usableNnc$(input, part.follower, part.pods, informers),
    storeChanged$: part.storeChanged,
  });
  // Run last pushed first: informers (no new input), the monitor (its
  // in-flight reconcile finishes), then the subscriptions.
  stops.push('subscriptions', () => {
    for (const s of subs) s.unsubscribe();
  });
  stops.push('monitor', () => part.monitor.stop());
  stops.push('informers', () => informers.stop());
  return informers;
}

/**
 * Each NNC: the store follows it first. Until the first usable one, an NNC
 * the fulfiller has not finished (no status, scaler or dynamic container yet)
 * is waited for, not handed to the monitor, which would warn about it. A
 * malformed one still goes there and is warned about; so is one that loses
 * its status later (that is wrong).
 */
function usableNnc$(
  input: WatchInput,
  follower: NncFollower,
  pods: PodFollower,
  informers: NodeInformers,
) {
  const { options, nnc } = input;
  let hadUsable = false;
  const waitedFor = (n: NodeNetworkConfig): boolean => {
    const kind = nncReadiness(n, options.namespace, options.nodeName).kind;
    if (kind === 'usable') hadUsable = true;
    return !hadUsable && kind === 'waiting';
  };
  return informers.nnc$.pipe(
    tap((n) => {
      nnc.current = n;
      // What the inventory just took may be a running pod's address: adopt it now.
      if (follower.follow(n) === 'synced') pods.inventorySynced();
    }),
    filter((n) => !waitedFor(n)),
    share(),
  );
}

/**
 * Why it waits: an info line when the reason changes, and at most once a
 * minute while it does not (waiting.ts).
 */
function sayWhyWaiting(
  input: WatchInput,
  informers: NodeInformers,
  stops: StopSteps,
): Subscription[] {
  const { log, readiness } = input;
  const every = input.waitNoticeMs ?? 60_000;
  const notice = new WaitNotice(every);
  const sayWhy = (): void => {
    const why = readiness.whyNot();
    if (why !== undefined && !why.say) return;
    if (notice.shouldSay(why?.reason, Date.now())) log.info('waiting', { reason: why?.reason });
  };
  const watches = [informers.pods, informers.nnc, informers.css];
  const subs = watches.map((w) =>
    w.events$.subscribe((e) => {
      // A failed list is said at once; lists that merely complete one by
      // one are not news until the last one has.
      if (e.type === 'error') readiness.lastWatchError = e.info.message;
      if (e.type === 'error' || (e.type === 'synced' && watches.every((x) => x.synced))) sayWhy();
    }),
  );
  subs.push(
    informers.nnc.cache$.subscribe(() => {
      if (watches.every((x) => x.synced)) sayWhy();
    }),
  );
  const ticker = setInterval(sayWhy, every);
  ticker.unref();
  stops.push('wait notices', () => clearInterval(ticker));
  return subs;
}

/** Outcomes and events to metrics and Events; the pod list to the store's followers. */
function feedStoreAndMetrics(input: WatchInput, informers: NodeInformers): Subscription[] {
  const { store, nnc, part } = input;
  const { monitor, metrics, pods, podWaits, record } = part;
  metrics.setPoolSource(() => {
    const snap = monitor.snapshot();
    if (!snap.ready) return undefined;
    return {
      observation: poolObservation(
        { ...snap, damping: monitor.damping() },
        nnc.current ? dynamicContainers(nnc.current) : [],
      ),
      counts: store.counts(),
    };
  });
  return [
    // What the cache holds now, whatever it is (a terminating one, none): the
    // node API hands out no address while it is gone or going (waiting.ts).
    informers.nnc.cache$.subscribe(() => {
      nnc.listed = informers.nnc.get(input.options.nodeName, input.options.namespace) as
        NodeNetworkConfig | undefined;
    }),
    monitor.outcomes$.subscribe((o) => {
      metrics.countReconcile(o.kind);
      if (o.wrote) metrics.countWrite(true);
      else if (o.kind === 'failed' && o.stage === 'write') metrics.countWrite(false);
      record(outcomeEvent(o));
    }),
    monitor.events$.subscribe((e) => record(monitorEvent(e))),
    // A lost watch is not a deleted pod: the follower reclaims only while synced.
    informers.pods.events$.subscribe((e) => {
      if (e.type === 'synced') pods.podsSynced(true);
      else if (e.type === 'error') pods.podsSynced(false);
    }),
    informers.pods.cache$.subscribe((list) => {
      pods.pods(list as PodView[]);
      podWaits.podsNow(list as PodLike[]);
    }),
  ];
}
