// The reconcile of one node as the queue runs it (docs/design/fulfiller.md#shape),
// controller-runtime's reconciler: the queue's handler runs syncNode
// (node-sync.ts) and applies what the run returns, in one place and one
// order: the NNC's removal to the view, the quarantine's record to the
// quarantine, the CSS to the fulfiller, a wait for the fence to the term.
// It holds the node records (node-record.ts) and the context a run reads,
// built over those parts; the reconcile's own files import only
// sync-context.ts, so that no part imports a file back.
import type { EventRecorder } from '../kube/events.ts';
import { noopEventRecorder } from '../kube/events.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { IpBackend } from './backend.ts';
import type { ClusterView } from './cluster-view.ts';
import type { FulfillerConfig } from './config.ts';
import type { LeaderTerm } from './leader-term.ts';
import type { AddressLedger } from './ledger.ts';
import type { FulfillerMetrics } from './metrics.ts';
import { NodeRecords } from './node-record.ts';
import { needsWork, priorityFor, syncNode } from './node-sync.ts';
import { nodeSelector } from './nodes.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi } from './ports.ts';
import type { QuarantineKeeper } from './quarantine-keeper.ts';
import { NodeQueue } from './queue.ts';
import type { ClockTimers } from '../clock/clock.ts';
import type { SyncAsks, SyncContext, SyncCounters } from './sync-context.ts';
import { NncConflictError } from './sync-context.ts';

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
  random?: () => number;
}

/** The fulfiller's parts a run reads and its result is applied to. */
export interface ReconcilerParts {
  deps: ReconcileDeps;
  log: Logger;
  clock: ClockTimers;
  newId: () => string;
  counters: SyncCounters;
  view: ClusterView;
  quarantine: QuarantineKeeper;
  leader: LeaderTerm;
  /** Addresses were taken or (`freed`) came free: publish the CSS; on frees wake nodes left short. */
  subnetsChanged(freed: boolean): void;
}

export class Reconciler {
  /** What the fulfiller remembers about each node, across terms. */
  readonly records = new NodeRecords();
  /** What a run reads. */
  readonly ctx: SyncContext;
  private readonly p: ReconcilerParts;

  constructor(parts: ReconcilerParts) {
    this.p = parts;
    this.ctx = syncContextOf(parts, this.records);
  }

  /** The node's lifecycle or status has work (pure and cheap: the resync asks it of every node). */
  needsWork(name: string): boolean {
    return needsWork(this.ctx, name);
  }

  /** A term's work queue: largest deficit first; its handler is one node's run. */
  newQueue(): NodeQueue {
    const { deps, clock, log, counters } = this.p;
    return new NodeQueue({
      workers: deps.config.workers,
      minIntervalMs: deps.config.minIntervalMs,
      backoff: deps.config.backoff,
      clock,
      random: deps.random,
      priority: (name) => priorityFor(this.ctx, name),
      handler: (name) => this.run(name),
      onError: (name, error, retryInMs) => {
        if (error instanceof NncConflictError) {
          counters.conflicts++;
          log.debug('node action conflicted: run again', { node: name, retryInMs });
          return;
        }
        counters.failures++;
        // Infinity (no retry before a change) would read `null` in the JSON log.
        log.warn('node action failed', {
          node: name,
          error: apiErrorInfo(error).message,
          ...(Number.isFinite(retryInMs) ? { retryInMs } : { waitsForChange: true }),
        });
      },
    });
  }

  /** One node's run; a failure is thrown on to the queue, which retries it, after what it asked is applied. */
  private async run(name: string): Promise<void> {
    const { leader, deps } = this.p;
    // No action from a view that may miss changes: the node waits for it.
    if (leader.waitReason() !== undefined) return leader.waitForView(name);
    const started = performance.now();
    const result = await syncNode(this.ctx, name);
    deps.metrics?.reconcile(result.outcome, (performance.now() - started) / 1000);
    this.apply(name, result);
    if (result.outcome === 'failed') throw result.error;
  }

  /**
   * What the run asked, in this order: the NNC's removal first (whether its
   * addresses stay reads the quarantine record), then the record, the CSS,
   * the wait.
   */
  private apply(name: string, asks: SyncAsks): void {
    const { view, quarantine, leader } = this.p;
    if (asks.removed) view.removeNnc(asks.removed);
    if (asks.quarantine === 'end') quarantine.end(name);
    else if (asks.quarantine)
      quarantine.hold(name, asks.quarantine.until, asks.quarantine.containers);
    if (asks.subnets) this.p.subnetsChanged(asks.subnets === 'freed');
    if (asks.waitsFor !== undefined) leader.waitForFence(name, asks.waitsFor);
  }
}

/** The context of one node's run, over the fulfiller's parts. */
function syncContextOf(parts: ReconcilerParts, records: NodeRecords): SyncContext {
  const { deps, view, quarantine, leader } = parts;
  const lists = deps.lists;
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
    record: (name) => records.of(name),
    now: () => parts.clock.now(),
    node: (name) => view.node(name),
    selected: nodeSelector(deps.config.nodeSelector),
    quarantines: quarantine.enabled,
    quarantineState: (name) => quarantine.state(name),
    ...(lists?.nodeExists ? { confirmNode: (name: string) => lists.nodeExists!(name) } : {}),
    allocationWait: (name) => leader.fence.waitReason(name),
    guard: () => leader.guard(),
  };
}
