// The reconcile of one node name as the queue runs it
// (docs/design/fulfiller.md#shape), controller-runtime's reconciler: the
// queue's handler runs syncNode (node-sync.ts) and applies what the run
// returns: the CSS to the publisher, a run later to the queue. It builds the
// context a run reads over the book and the term, and each term's queue.
import type { EventRecorder } from '../kube/events.ts';
import { noopEventRecorder } from '../kube/events.ts';
import { apiErrorInfo, isNotFound } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { ClockTimers } from '../clock/clock.ts';
import type { IpBackend } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import type { LeaderTerm } from './leader-term.ts';
import type { FulfillerMetrics } from './metrics.ts';
import type { NodeBook } from './node-book.ts';
import { nextSeq } from './node-book.ts';
import { needsWork, priorityFor, syncNode } from './node-sync.ts';
import { nodeSelector } from './nodes.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi, SubnetStateApi } from './ports.ts';
import type { TermParts } from './leader-term.ts';
import { keepRescued } from './pod-rescue.ts';
import { exhaustionPublisher } from './subnet-report.ts';
import { NodeQueue } from './queue.ts';
import type { SyncContext, SyncCounters } from './sync-context.ts';
import { NncConflictError } from './sync-context.ts';

export interface ReconcilerDeps {
  config: FulfillerConfig;
  cssApi: SubnetStateApi;
  book: NodeBook;
  backend: IpBackend;
  nncApi: NncStatusApi;
  lifecycleApi: NncLifecycleApi;
  lists: ClusterListApi;
  leader: LeaderTerm;
  log: Logger;
  clock: ClockTimers;
  newId: () => string;
  counters: SyncCounters;
  events?: EventRecorder;
  metrics?: FulfillerMetrics;
  random?: () => number;
  /** Addresses were taken or (`freed`) came free: publish the CSS; on frees wake nodes left short. */
  subnetsChanged(freed: boolean): void;
}

export class Reconciler {
  /** What a run reads. */
  readonly ctx: SyncContext;
  private readonly d: ReconcilerDeps;
  private queue: NodeQueue | undefined;

  constructor(deps: ReconcilerDeps) {
    this.d = deps;
    const { leader, book } = deps;
    this.ctx = {
      config: deps.config,
      backend: deps.backend,
      book,
      nncApi: deps.nncApi,
      lifecycleApi: deps.lifecycleApi,
      lists: deps.lists,
      log: deps.log,
      events: deps.events ?? noopEventRecorder,
      metrics: deps.metrics,
      newId: deps.newId,
      counters: deps.counters,
      selected: nodeSelector(deps.config.nodeSelector),
      allocationWait: (record) => {
        const view = leader.waitReason();
        if (view !== undefined) return view;
        const fence = book.fenceWait(record);
        if (fence !== undefined) leader.noteFenceWait(record.name, fence);
        return fence;
      },
      guard: () => leader.guard(),
      now: () => deps.clock.now(),
    };
  }

  /** What each term runs: its queue and CSS publisher, the pods' rescue, the resync's reads. */
  termParts(publishSubnets: () => void): TermParts {
    const { config, book, backend, log, clock, leader, newId, cssApi } = this.d;
    const random = this.d.random ? { random: this.d.random } : {};
    return {
      newQueue: () => this.newQueue(),
      newPublisher: () =>
        exhaustionPublisher({
          config,
          api: cssApi,
          events: this.ctx.events,
          clock,
          log,
          ...random,
        }),
      needsWork: (name) => this.needsWork(name),
      reread: (name) => this.reread(name),
      // Only a backend that can rebuild a container needs the pods (pod-rescue.ts).
      ...(backend.rebuild
        ? { rescue: (pods) => keepRescued(pods, { book, backend, log, newId }) }
        : {}),
      started: () =>
        log.info('fulfiller leads', {
          nodes: book.nodeCount,
          nncs: book.nncCount,
          backend: backend.kind,
          subnets: backend.subnets().map((s) => `${s.name}=${s.cidr} free ${s.free}`),
          view: leader.freshness.statement(),
        }),
      resynced: publishSubnets,
    };
  }

  /** Reads the name's NNC afresh into the book (one known in more than one state: node-book.ts). */
  reread(name: string): void {
    const sent = nextSeq();
    this.d.nncApi.get(name).then(
      (nnc) => this.d.book.answered('nnc', name, nnc, sent),
      (err: unknown) => {
        if (isNotFound(err)) this.d.book.answered('nnc', name, undefined, sent);
      },
    );
  }

  /** The name's lifecycle or status has work (pure and cheap: the resync asks it of every name). */
  needsWork(name: string): boolean {
    return needsWork(this.ctx, name);
  }

  /** A term's work queue: largest deficit first; its handler is one name's run. */
  newQueue(): NodeQueue {
    const { config, clock, log, counters } = this.d;
    const queue = new NodeQueue({
      workers: config.workers,
      minIntervalMs: config.minIntervalMs,
      backoff: config.backoff,
      clock,
      random: this.d.random,
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
    this.queue = queue;
    return queue;
  }

  /** One name's run; a failure is thrown on to the queue, which retries it, after what it asked is applied. */
  private async run(name: string): Promise<void> {
    const { leader, metrics } = this.d;
    // No action from a view that may miss changes: the watch's return resyncs.
    if (leader.waitReason() !== undefined) return;
    const started = performance.now();
    const result = await syncNode(this.ctx, name);
    metrics?.reconcile(result.outcome, (performance.now() - started) / 1000);
    if (result.subnets) this.d.subnetsChanged(result.subnets === 'freed');
    if (result.requeueAfterMs !== undefined) this.queue?.enqueueAfter(name, result.requeueAfterMs);
    if (result.outcome === 'failed') throw result.error;
  }
}
