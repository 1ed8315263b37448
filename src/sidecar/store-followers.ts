// The node IP store following its two truths (docs/design/node-store.md):
// the NNC (its inventory sync, which the NNC intake runs before the monitor
// sees each NNC) and the pods (leaked IPs reclaimed, reported addresses
// adopted; no IP is handed out before it has, the node API's gate). What
// they find is logged, counted and told as Events.
import { Subject } from 'rxjs';
import { followNnc, type NncFollower } from '../ipstore/follow-nnc.ts';
import { followPods, type PodFollower } from '../ipstore/follow-pods.ts';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { Logger } from '../log/logger.ts';
import type { MetricsCollector } from '../metrics/collector.ts';
import { LeakMetrics } from '../metrics/leaks.ts';
import { vanishedEvent } from './events.ts';
import { LeakReporter } from './leaks.ts';
import type { RecordEvent } from './nnc-events.ts';
import { DEFAULT_LEAK_GRACE_SECONDS, type SidecarOptions } from './options.ts';
import type { StopSteps } from './stop-steps.ts';

export interface StoreFollowers {
  /** The store following the NNC: the intake's first half. */
  nnc: NncFollower;
  /** The store following the pods: adoption, leak suspects and reclaims. */
  pods: PodFollower;
  /** What was reclaimed, adopted and found conflicting so far. */
  leaks: LeakReporter;
  /** Tells the monitor the store changed under it (reclaimed IPs). */
  storeChanged: Subject<void>;
}

export function followStore(
  input: {
    options: SidecarOptions;
    log: Logger;
    store: NodeIpStore;
    record: RecordEvent;
    metrics: MetricsCollector;
  },
  stops: StopSteps,
): StoreFollowers {
  const { options, log, store, record } = input;
  const nnc = followNnc(store, {
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
    metrics: new LeakMetrics(input.metrics.registry),
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
  return { nnc, pods, leaks, storeChanged };
}
