// The fulfiller (docs/design/fulfiller.md#shape): makes every NNC's status
// follow its spec and owns the NNC lifecycle, as controller-runtime shapes a
// controller. Composed of
//   - the cluster view (cluster-view.ts): NNCs and Nodes from the watches
//     into the address ledger and a node cache, on every replica, so a
//     standby is warm; it says only "this name changed";
//   - the leader term (leader-term.ts): lead()/follow() from the elector,
//     fresh lists and the fence before the first action, then the node
//     queue, the ClusterSubnetState publisher and the resync;
//   - the quarantine (quarantine-keeper.ts) of deleted Nodes' addresses;
//   - the reconciler (reconciler.ts): the queue's handler runs one node's
//     sync (node-sync.ts), which returns its outcome and what it asks of
//     these parts, and applies that; it keeps one record per node
//     (node-record.ts).
// Nothing is done before both first lists completed, so the ledger knows
// every address already handed out.
import { randomUUID } from 'node:crypto';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { IpBackend, SubnetInfo } from './backend.ts';
import { ClusterView } from './cluster-view.ts';
import type { FulfillerConfig } from './config.ts';
import { LeaderTerm } from './leader-term.ts';
import type { AddressLedger } from './ledger.ts';
import type { FulfillerMetrics } from './metrics.ts';
import type { SyncCounters } from './node-sync.ts';
import type { NodeObject } from './nodes.ts';
import { keepRescued, type PodAddresses } from './pod-rescue.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi, SubnetStateApi } from './ports.ts';
import { QuarantineKeeper } from './quarantine-keeper.ts';
import { systemClock, type ClockTimers } from '../clock/clock.ts';
import { STATUS_SUBNET_FULL } from './status.ts';
import { exhaustionPublisher, fulfillerGauges, SubnetSampler } from './subnet-report.ts';
import { Reconciler } from './reconciler.ts';
import { warn } from './sync-context.ts';
import type { ViewSource } from './view.ts';

export { ConflictLoopError } from './node-sync.ts';
export { NotLeaderError } from './leader-term.ts';

export interface FulfillerDeps {
  config: FulfillerConfig;
  ledger: AddressLedger;
  backend: IpBackend;
  nncApi: NncStatusApi;
  lifecycleApi: NncLifecycleApi;
  cssApi: SubnetStateApi;
  logger: Logger;
  events?: EventRecorder;
  metrics?: FulfillerMetrics;
  clock?: ClockTimers;
  random?: () => number;
  newId?: () => string;
  /** Writes are allowed right now (the lease is held and fresh); default: while leading. */
  canWrite?: () => boolean;
  /**
   * Fresh lists, read on taking the Lease before the first action; without
   * it (in-memory tests only) a term starts from what the watches delivered.
   */
  lists?: ClusterListApi;
}

export interface FulfillerStats {
  nodes: number;
  writes: number;
  conflicts: number;
  failures: number;
  allocated: number;
  released: number;
  pending: number;
  active: number;
  leading: boolean;
  subnets: Array<SubnetInfo & { exhausted: boolean | undefined }>;
}

export class Fulfiller {
  private readonly deps: FulfillerDeps;
  private readonly log: Logger;
  private readonly clock: ClockTimers;
  private readonly counters: SyncCounters = {
    writes: 0,
    conflicts: 0,
    failures: 0,
    allocated: 0,
    released: 0,
  };
  private readonly view: ClusterView;
  private readonly leader: LeaderTerm;
  private readonly quarantine: QuarantineKeeper;
  private readonly sampler: SubnetSampler;
  private readonly reconciler: Reconciler;
  private stopped = false;

  constructor(deps: FulfillerDeps) {
    this.deps = deps;
    this.log = deps.logger;
    const clock = (this.clock = deps.clock ?? systemClock);
    const { config, ledger, backend } = deps;
    const newId = deps.newId ?? randomUUID;
    const touch = (name: string): void => this.leader.touch(name);
    this.sampler = new SubnetSampler(config, backend, clock);
    this.view = new ClusterView(ledger, this.log, {
      changed: touch,
      nncMoved: () => this.leader.nncMoved(),
      keepsOnDeletion: (name) => this.quarantine.keepsOnDeletion(name),
      nncGone: (name) => this.reconciler.records.forget(name),
      subnetsChanged: (freed) => this.subnetsChanged(freed),
    });
    this.quarantine = new QuarantineKeeper({
      ledger,
      clock,
      log: this.log,
      graceMs: config.quarantineMs,
      podCheckMs: config.quarantinePodCheckMs,
      backoff: config.backoff,
      ...(deps.random ? { random: deps.random } : {}),
      ...(deps.lists ? { lists: deps.lists } : {}),
      hasNode: (name) => this.view.hasNode(name),
      nodesKnown: () => this.view.nodesKnown,
      leading: () => this.leader.wanted,
      touch,
    });
    this.leader = new LeaderTerm({
      config,
      clock,
      log: this.log,
      ...(deps.random ? { random: deps.random } : {}),
      newId,
      ...(deps.canWrite ? { canWrite: deps.canWrite } : {}),
      ...(deps.lists ? { lists: deps.lists } : {}),
      lifecycleApi: deps.lifecycleApi,
      ledger,
      view: this.view,
      quarantine: this.quarantine,
      // Only a backend that can rebuild a container needs the pods (pod-rescue.ts).
      ...(backend.rebuild
        ? {
            rescue: (pods: PodAddresses[]) =>
              keepRescued(pods, {
                ledger,
                backend,
                log: this.log,
                newId,
                hasNode: (name) => this.view.hasNode(name),
                touch,
              }),
          }
        : {}),
      needsWork: (name) => this.reconciler.needsWork(name),
      newQueue: () => this.reconciler.newQueue(),
      newPublisher: () =>
        exhaustionPublisher({
          config,
          api: deps.cssApi,
          events: this.reconciler.ctx.events,
          clock,
          log: this.log,
          ...(deps.random ? { random: deps.random } : {}),
        }),
      started: () =>
        this.log.info('fulfiller leads', {
          nodes: this.view.nodeCount,
          nncs: ledger.size,
          backend: backend.kind,
          subnets: backend.subnets().map((s) => `${s.name}=${s.cidr} free ${s.free}`),
          view: this.leader.freshness.statement(),
        }),
      resynced: () => this.publishSubnets(),
    });
    this.reconciler = new Reconciler({
      deps,
      log: this.log,
      clock,
      newId,
      counters: this.counters,
      view: this.view,
      quarantine: this.quarantine,
      leader: this.leader,
      subnetsChanged: (freed) => this.subnetsChanged(freed),
    });
    deps.metrics?.setSource(() =>
      fulfillerGauges({
        ledger,
        invalid: (name) => this.reconciler.records.invalid(name),
        sampler: this.sampler,
        queueDepth: this.leader.term?.queue.pending ?? 0,
        published: (subnet) => this.leader.term?.css.published(subnet),
      }),
    );
    backend.attach?.({
      nodeNeedsRound: touch,
      addressesFreed: () => this.subnetsChanged(true),
      warn: (name, reason, message) => {
        const nnc = ledger.nnc(name);
        if (nnc && this.leader.mayWrite) warn(this.reconciler.ctx, nnc, reason, message);
      },
    });
    // However an address comes free (a status read without it, a deleted
    // NNC, a settled doubt), nodes left short get another go, once per tick.
    let wakeQueued = false;
    ledger.subscribe((_ip, used) => {
      if (used || wakeQueued) return;
      wakeQueued = true;
      queueMicrotask(() => {
        wakeQueued = false;
        this.subnetsChanged(true);
      });
    });
  }

  /** A watched NNC was added or changed (or read by a re-list). */
  upsert(nnc: NodeNetworkConfig): void {
    this.view.upsertNnc(nnc);
  }

  /** A watched NNC was deleted. */
  remove(nnc: NodeNetworkConfig): void {
    this.view.removeNnc(nnc);
  }

  /** The NNC watch completed a full list: `all` is every NNC, current at `listRv`. */
  synced(all: NodeNetworkConfig[], listRv?: string): void {
    if (this.stopped) return;
    this.view.nncsSynced(all, listRv);
    this.sampler.sample(); // the forecast's first point: what is free once the NNCs are known
    this.leader.watchUp('nnc');
    this.leader.maybeStart();
  }

  /** A watched Node was added or changed. */
  upsertNode(node: NodeObject): void {
    this.view.upsertNode(node);
  }

  /** A watched Node was deleted: its NNC goes, and its addresses are freed or quarantined. */
  removeNode(node: NodeObject): void {
    this.view.removeNode(node);
  }

  /** The Node watch completed a full list (current at `listRv`, as for synced()). */
  nodesSynced(all: NodeObject[], listRv?: string): void {
    if (this.stopped) return;
    this.view.nodesSynced(all, listRv);
    this.leader.watchUp('node');
    this.leader.maybeStart();
  }

  /** This replica holds the lease: start working (once both watches listed). */
  lead(): void {
    this.leader.lead();
  }

  /** The lease is lost or being released: stop taking work, finish what runs. */
  follow(): Promise<void> {
    return this.leader.follow();
  }

  /** A watch failed or waits to restart: nothing is allocated until it runs and has listed again. */
  watchDown(source: ViewSource, reason: string): void {
    this.leader.watchDown(source, reason);
  }

  /** A watch listed and runs again. */
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
    return this.view.ready;
  }

  /** Queues every node that needs work (the periodic resync, also callable by tests). */
  resync(): void {
    this.leader.resync();
  }

  /** Resolves when no node has work queued or running and CSS writes are done. */
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
    this.view.close();
    await this.leader.stop();
  }

  stats(): FulfillerStats {
    const term = this.leader.term;
    return {
      nodes: this.deps.ledger.size,
      ...this.counters,
      pending: term?.queue.pending ?? 0,
      active: term?.queue.active ?? 0,
      leading: term !== undefined,
      subnets: this.deps.backend
        .subnets()
        .map((s) => ({ ...s, exhausted: term?.css.published(s.name) })),
    };
  }

  /** Addresses were taken or (`freed`) came free: publish the CSS; on frees wake nodes left short. */
  private subnetsChanged(freed: boolean): void {
    this.sampler.sample();
    this.publishSubnets();
    if (freed) this.wakeShortNodes();
  }

  private publishSubnets(): void {
    const term = this.leader.term;
    if (term && !this.stopped) term.css.update(this.deps.backend.subnets());
  }

  /** Addresses came free: nodes left short by a full subnet, or holding withheld addresses, get another go. */
  private wakeShortNodes(): void {
    const term = this.leader.term;
    if (!term || this.stopped) return;
    const { ledger } = this.deps;
    for (const name of ledger.names())
      if (ledger.nnc(name)?.status?.status === STATUS_SUBNET_FULL) term.queue.enqueue(name);
    for (const name of this.reconciler.records.withholding()) term.queue.enqueue(name);
  }
}
