// The last start step (run.ts): the node's watches (node-watches.ts), built
// with the sidecar, start once the node API listens and are wired through it
// (docs/design/sidecar.md#the-data-path). Each NNC goes through the intake
// (the store follows it, then the monitor gets it), the pods to the store's
// follower, demand and exhaustion to the monitor; the monitor's outcomes and
// events feed the metrics and Events; the reason the sidecar is not ready yet
// is logged as it changes. Its stop steps run first.
import type { Subscription } from 'rxjs';
import { unrefSystemClock, type Clock, type TimerHandle } from '../clock/clock.ts';
import type { PodView } from '../ipstore/pod-plan.ts';
import { poolObservation } from '../metrics/observation.ts';
import { dynamicContainers, type NodeNetworkConfig } from '../nnc/types.ts';
import { monitorEvent, outcomeEvent } from './events.ts';
import type { NodeInformers } from './informers.ts';
import type { PodLike } from './pod-wait.ts';
import type { Sidecar } from './sidecar.ts';
import type { StopSteps } from './stop-steps.ts';
import { WaitNotice } from './waiting.ts';

export interface WatchTuning {
  /** How often an unchanged reason for waiting is said again (default 60 s). */
  waitNoticeMs?: number;
  /** Time and timers of the wait notices (default: the system's, holding no process open). */
  clock?: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
}

/** Starts the watches and wires them through the sidecar. */
export function wireWatches(
  sidecar: Sidecar,
  tuning: WatchTuning,
  stops: StopSteps,
): NodeInformers {
  const { watches, intake, pool } = sidecar;
  const informers = watches.start();
  const subs = [
    ...sayWhyWaiting(sidecar, informers, tuning, stops),
    // What the cache holds now, whatever it is (a terminating one, none): the
    // node API hands out no address while it is gone or going (waiting.ts).
    informers.nnc.cache$.subscribe(() =>
      intake.onListed(
        informers.nnc.get(sidecar.options.nodeName, sidecar.options.namespace) as
          NodeNetworkConfig | undefined,
      ),
    ),
    ...feedOutputs(sidecar, informers),
  ];
  pool.monitor.start({
    demand$: informers.demand$,
    exhausted$: informers.exhausted$,
    nnc$: intake.toMonitor$,
    storeChanged$: sidecar.followers.storeChanged,
  });
  // Each NNC through the intake: the store follows it, then the monitor gets it.
  subs.push(intake.take(informers.nnc$));
  // Run last pushed first: informers (no new input), the monitor (its
  // in-flight reconcile finishes), then the subscriptions.
  stops.push('subscriptions', () => {
    for (const s of subs) s.unsubscribe();
  });
  stops.push('monitor', () => pool.monitor.stop());
  stops.push('informers', () => watches.stop());
  return informers;
}

/**
 * Why it waits: an info line when the reason changes, and at most once a
 * minute while it does not (waiting.ts).
 */
function sayWhyWaiting(
  sidecar: Sidecar,
  informers: NodeInformers,
  tuning: WatchTuning,
  stops: StopSteps,
): Subscription[] {
  const { log } = sidecar;
  const every = tuning.waitNoticeMs ?? 60_000;
  const clock = tuning.clock ?? unrefSystemClock;
  const notice = new WaitNotice(every);
  const sayWhy = (): void => {
    const why = sidecar.whyNotReady();
    if (why !== undefined && !why.say) return;
    if (notice.shouldSay(why?.reason, clock.now())) log.info('waiting', { reason: why?.reason });
  };
  const watches = [informers.pods, informers.nnc, informers.css];
  const subs = watches.map((w) =>
    w.events$.subscribe((e) => {
      // A failed list is said at once; lists that merely complete one by
      // one are not news until the last one has.
      if (e.type === 'error' || (e.type === 'synced' && watches.every((x) => x.synced))) sayWhy();
    }),
  );
  subs.push(
    informers.nnc.cache$.subscribe(() => {
      if (watches.every((x) => x.synced)) sayWhy();
    }),
  );
  // Said again every `every` while the reason stands.
  let ticker: TimerHandle;
  const tick = (): void => {
    ticker = clock.setTimeout(tick, every);
    sayWhy();
  };
  ticker = clock.setTimeout(tick, every);
  stops.push('wait notices', () => clock.clearTimeout(ticker));
  return subs;
}

/** Outcomes and events to metrics and Events; the pod list to the store's follower. */
function feedOutputs(sidecar: Sidecar, informers: NodeInformers): Subscription[] {
  const { store, intake, metrics, podWaits, record } = sidecar;
  const { monitor } = sidecar.pool;
  const { pods } = sidecar.followers;
  metrics.setPoolSource(() => {
    const snap = monitor.snapshot();
    if (!snap.ready) return undefined;
    const nnc = intake.current();
    return {
      observation: poolObservation(
        { ...snap, damping: monitor.damping() },
        nnc ? dynamicContainers(nnc) : [],
        sidecar.families(),
      ),
      counts: store.counts(),
    };
  });
  return [
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
