// The context of one node's reconcile (sync-context.ts), built over the
// fulfiller's parts: the view, the quarantine and the leader term. Apart
// from sync-context.ts, which the reconcile's own files import, so that the
// parts (the term's fence reads status-round.ts) import no file back.
import type { EventRecorder } from '../kube/events.ts';
import { noopEventRecorder } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { IpBackend } from './backend.ts';
import type { ClusterView } from './cluster-view.ts';
import type { FulfillerConfig } from './config.ts';
import type { LeaderTerm } from './leader-term.ts';
import type { AddressLedger } from './ledger.ts';
import type { FulfillerMetrics } from './metrics.ts';
import { nodeSelector } from './nodes.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi } from './ports.ts';
import type { QuarantineKeeper } from './quarantine-keeper.ts';
import type { QueueClock } from './queue.ts';
import type { SyncContext, SyncCounters } from './sync-context.ts';

/** The fulfiller's dependencies the reconcile uses (FulfillerDeps' part). */
export interface ReconcileDeps {
  config: FulfillerConfig;
  ledger: AddressLedger;
  backend: IpBackend;
  nncApi: NncStatusApi;
  lifecycleApi: NncLifecycleApi;
  events?: EventRecorder;
  metrics?: FulfillerMetrics;
  lists?: ClusterListApi;
}

/** The context of one node's reconcile, over the fulfiller's parts. */
export function syncContextOf(parts: {
  deps: ReconcileDeps;
  log: Logger;
  clock: QueueClock;
  newId: () => string;
  counters: SyncCounters;
  view: ClusterView;
  quarantine: QuarantineKeeper;
  leader: LeaderTerm;
  guard(): void;
  subnetsChanged(freed: boolean): void;
}): SyncContext {
  const { deps, view, quarantine, leader } = parts;
  return {
    config: deps.config,
    backend: deps.backend,
    ledger: deps.ledger,
    nncApi: deps.nncApi,
    lifecycleApi: deps.lifecycleApi,
    log: parts.log,
    events: deps.events ?? noopEventRecorder,
    metrics: deps.metrics,
    newId: parts.newId,
    counters: parts.counters,
    invalidReported: new Map(),
    setupReported: new Map(),
    doubts: new Map(),
    now: () => parts.clock.now(),
    node: (name) => view.node(name),
    selected: nodeSelector(deps.config.nodeSelector),
    ...(quarantine.enabled ? { quarantine: quarantine.book } : {}),
    quarantineState: (name) => quarantine.state(name),
    removed: (nnc) => view.removeNnc(nnc),
    ...(deps.lists?.nodeExists
      ? { confirmNode: (name: string) => deps.lists!.nodeExists!(name) }
      : {}),
    armQuarantine: (name, until) => quarantine.arm(name, until),
    allocationWait: (name) => leader.fence.waitReason(name),
    waitFor: (name, reason) => leader.waitForFence(name, reason),
    guard: parts.guard,
    subnetsChanged: parts.subnetsChanged,
  };
}
