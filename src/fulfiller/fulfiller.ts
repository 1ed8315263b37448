// The fulfiller (docs/design/fulfiller.md#shape): makes every NNC's status
// follow its spec and owns the NNC lifecycle, as controller-runtime shapes a
// controller. Composed, in this order, each part built over the ones before:
//   - the book (node-book.ts): one record per node, fed by the watches and
//     by every answer, and the indexes derived from them (the addresses in
//     use among them); on every replica, so a standby is warm;
//   - the leader term (leader-term.ts): lead()/follow() from the elector,
//     fresh lists and the fence before the first action, then the queue,
//     the ClusterSubnetState publisher and the resync;
//   - the reconciler (reconciler.ts): the queue's handler runs one name's
//     sync (node-sync.ts), which returns its outcome and what it asks.
// Nothing is done before both watches and the term's fresh lists are in.
import { randomUUID } from 'node:crypto';
import type { EventRecorder } from '../kube/events.ts';
import { noopEventRecorder } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { systemClock, type ClockTimers } from '../clock/clock.ts';
import type { IpBackend, SubnetInfo } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import { LeaderTerm } from './leader-term.ts';
import type { FulfillerMetrics } from './metrics.ts';
import type { NodeBook } from './node-book.ts';
import { nextSeq } from './node-book.ts';
import type { NodeObject } from './nodes.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi, SubnetStateApi } from './ports.ts';
import { Reconciler } from './reconciler.ts';
import { fulfillerGauges, SubnetChanges, SubnetSampler } from './subnet-report.ts';
import type { SyncCounters } from './sync-context.ts';
import { warn } from './sync-context.ts';
import type { ViewSource } from './view.ts';

export { ConflictLoopError } from './sync-context.ts';
export { NotLeaderError } from './leader-term.ts';

export interface FulfillerDeps {
  config: FulfillerConfig;
  /** The node records: made before the backend, which reads the addresses in use from it. */
  book: NodeBook;
  backend: IpBackend;
  nncApi: NncStatusApi;
  lifecycleApi: NncLifecycleApi;
  cssApi: SubnetStateApi;
  /** Fresh lists for each term, and the reads its runs need. */
  lists: ClusterListApi;
  logger: Logger;
  events?: EventRecorder;
  metrics?: FulfillerMetrics;
  clock?: ClockTimers;
  random?: () => number;
  newId?: () => string;
  /** Writes are allowed right now (the lease is held and fresh); default: while leading. */
  canWrite?: () => boolean;
}

export interface FulfillerStats extends SyncCounters {
  nodes: number;
  pending: number;
  active: number;
  leading: boolean;
  subnets: Array<SubnetInfo & { exhausted: boolean | undefined }>;
}

export class Fulfiller {
  private readonly deps: FulfillerDeps;
  private readonly book: NodeBook;
  private readonly counters: SyncCounters = {
    ...{ writes: 0, conflicts: 0, failures: 0, allocated: 0, released: 0 },
  };
  private readonly sampler: SubnetSampler;
  private readonly leader: LeaderTerm;
  private readonly subnets: SubnetChanges;
  private readonly reconciler: Reconciler;
  private stopped = false;

  constructor(deps: FulfillerDeps) {
    this.deps = deps;
    const { config, book, backend, logger: log } = deps;
    this.book = book;
    const clock = deps.clock ?? systemClock;
    const newId = deps.newId ?? randomUUID;
    const events = deps.events ?? noopEventRecorder;
    const random = deps.random ? { random: deps.random } : {};
    this.sampler = new SubnetSampler(config, backend, clock);
    this.leader = new LeaderTerm({
      config,
      clock,
      log,
      book,
      lists: deps.lists,
      lifecycleApi: deps.lifecycleApi,
      newId,
      ...random,
      ...(deps.canWrite ? { canWrite: deps.canWrite } : {}),
    });
    const leader = this.leader;
    const subnets = (this.subnets = new SubnetChanges({
      book,
      backend,
      sampler: this.sampler,
      term: {
        publisher: () => (this.stopped ? undefined : leader.term?.css),
        enqueue: (name) => leader.enqueue(name),
      },
    }));
    this.reconciler = new Reconciler({
      ...deps,
      ...random,
      leader,
      log,
      clock,
      newId,
      counters: this.counters,
      subnetsChanged: (freed) => subnets.changed(freed),
    });
    const reconciler = this.reconciler;
    leader.runs(reconciler.termParts(() => subnets.publish()));
    deps.metrics?.setSource(() =>
      fulfillerGauges({
        book,
        sampler: this.sampler,
        queueDepth: leader.term?.queue.pending ?? 0,
        published: (subnet) => leader.term?.css.published(subnet),
      }),
    );
    backend.attach?.({
      nodeNeedsRound: (name) => leader.touch(name),
      addressesFreed: () => subnets.changed(true),
      warn: (name, reason, message) => {
        const nnc = book.nnc(name);
        if (nnc && leader.mayWrite) warn({ events, config }, nnc, reason, message);
      },
    });
  }

  /** A watched NNC was added or changed. */
  upsert(nnc: NodeNetworkConfig): void {
    if (!this.stopped) this.book.streamed('nnc', nnc);
  }

  /** A watched NNC was deleted. */
  remove(nnc: NodeNetworkConfig): void {
    if (!this.stopped) this.book.streamed('nnc', nnc, true);
  }

  /** The NNC watch listed: `all` is every NNC, from a request sent at `sent` (versions.ts; default: now). */
  synced(all: NodeNetworkConfig[], sent = nextSeq()): void {
    if (this.stopped) return;
    this.book.listed('nnc', all, sent, true);
    this.sampler.sample(); // the forecast's first point: what is free once the NNCs are known
    this.leader.watchUp('nnc');
  }

  /** A watched Node was added or changed. */
  upsertNode(node: NodeObject): void {
    if (!this.stopped) this.book.streamed('node', node);
  }

  /** A watched Node was deleted. */
  removeNode(node: NodeObject): void {
    if (!this.stopped) this.book.streamed('node', node, true);
  }

  /** The Node watch listed (as for synced()). */
  nodesSynced(all: NodeObject[], sent = nextSeq()): void {
    if (this.stopped) return;
    this.book.listed('node', all, sent, true);
    this.leader.watchUp('node');
  }

  /** This replica holds the Lease (the elector says so). */
  lead(): void {
    this.leader.lead();
  }

  /** The Lease is lost or let go: finish what runs, keep nothing of the term. */
  follow(): Promise<void> {
    return this.leader.follow();
  }

  /** A watch failed or waits to restart: nothing runs until it runs and has listed again. */
  watchDown(source: ViewSource, reason: string): void {
    this.leader.watchDown(source, reason);
  }

  watchUp(source: ViewSource): void {
    this.leader.watchUp(source);
  }

  /** Why the fulfiller's actions wait now; undefined when they do not. */
  waitReason(): string | undefined {
    return this.leader.waitReason();
  }

  get leading(): boolean {
    return this.leader.term !== undefined;
  }

  /** Both watches have listed: the picture is complete. */
  get ready(): boolean {
    return this.book.nodesListed && this.book.nncsListed;
  }

  /** Queues every name that has work (the periodic resync, also callable by tests). */
  resync(): void {
    this.leader.resync();
  }

  /** Resolves when no name has work queued or running and CSS writes are done. */
  async whenIdle(): Promise<void> {
    const term = this.leader.term;
    if (!term) return;
    await term.queue.whenIdle();
    await term.css.settled();
  }

  /** Finishes actions in progress, then stops; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.leader.stop();
  }

  stats(): FulfillerStats {
    const term = this.leader.term;
    return {
      nodes: this.book.nncCount,
      ...this.counters,
      pending: term?.queue.pending ?? 0,
      active: term?.queue.active ?? 0,
      leading: term !== undefined,
      subnets: this.deps.backend
        .subnets()
        .map((s) => ({ ...s, exhausted: term?.css.published(s.name) })),
    };
  }
}
