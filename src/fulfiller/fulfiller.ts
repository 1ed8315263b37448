// The fulfiller's control loop: makes every NNC's status follow its spec and
// owns the NNC lifecycle (an NNC per Node, created, recreated and deleted).
// It learns NNCs and Nodes from watches (upsert/remove/synced for each) into
// the AddressLedger and a node cache, on every replica, so a standby is warm.
// Only while it leads (lead()/follow(), from the leader elector) does it run
// a term: a NodeQueue serving nodes largest deficit first with bounded
// parallelism, minimum interval per node and backoff, the CSS publisher and
// the periodic resync. Nothing is done before both first lists completed, so
// the ledger knows every address already handed out. A term starts from the
// truth (README "High availability"): on taking the Lease the NNCs and Nodes are listed afresh
// and loaded before the first action, and while the NNC or Node watch is not
// running and synced nothing is done: the node waits, /readyz and the log
// say why (view.ts).
import { randomUUID } from 'node:crypto';
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { GROUP, dynamicContainers } from '../nnc/types.ts';
import type { EventRecorder } from '../kube/events.ts';
import { noopEventRecorder } from '../kube/events.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { IpBackend, SubnetInfo } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import { exhaustionLevels } from './exhaustion.ts';
import type { AddressLedger } from './ledger.ts';
import { addressesOf, isNewer, rvNumber } from './ledger.ts';
import type { FulfillerGauges, FulfillerMetrics } from './metrics.ts';
import { needsWork, priorityFor, syncNode } from './node-sync.ts';
import type { SyncContext, SyncCounters } from './node-sync.ts';
import type { NodeInfo, NodeObject } from './nodes.ts';
import { nodeInfo, nodeSelector } from './nodes.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi, SubnetStateApi } from './ports.ts';
import { Backoff } from '../kube/backoff.ts';
import { newestVersion, vanished } from './fresh-lists.ts';
import { ViewFreshness } from './view.ts';
import { TermFence } from './term-fence.ts';
import { QuarantineBook, isTerminating, quarantineEnd, restoreRecord } from './quarantine.ts';
import { QuarantinePods } from './quarantine-pods.ts';
import { orphanedAddresses, withRescued, type PodAddresses } from './pod-rescue.ts';
import { UNANSWERED_WRITE_MS } from './status-round.ts';
import type { ViewSource } from './view.ts';
import { NodeQueue, realClock } from './queue.ts';
import { warn } from './sync-context.ts';
import type { QueueClock } from './queue.ts';
import { STATUS_SUBNET_FULL, jsonEqual, statusHolds } from './status.ts';
import { ExhaustionPublisher } from './subnet-state.ts';
import { ExhaustionForecaster } from './forecast.ts';

export { ConflictLoopError } from './node-sync.ts';

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
  clock?: QueueClock;
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

/** A write was attempted while this replica does not lead. */
export class NotLeaderError extends Error {
  override readonly name = 'NotLeaderError';
}

/** What runs while this replica leads. */
interface Term {
  queue: NodeQueue;
  css: ExhaustionPublisher;
  resyncTimer: unknown;
}

/** Why allocations wait while a new term lists NNCs and Nodes afresh (every normal start). */
const FRESH_LISTS = 'the new term lists the NodeNetworkConfigs and Nodes afresh';

export class Fulfiller {
  private readonly deps: FulfillerDeps;
  private readonly log: Logger;
  private readonly clock: QueueClock;
  private readonly ledger: AddressLedger;
  private readonly nodes = new Map<string, NodeInfo>();
  /** Newest Node resourceVersion read per name, deletions included. */
  private readonly nodeVersions = new Map<string, bigint>();
  private readonly selected: (node: NodeInfo) => boolean;
  private readonly ctx: SyncContext;
  private readonly counters: SyncCounters = {
    writes: 0,
    conflicts: 0,
    failures: 0,
    allocated: 0,
    released: 0,
  };
  private nncsListed = false;
  private nodesListed = false;
  private wantLead = false;
  private term: Term | undefined;
  /** The previous term still finishing its actions: no new term before it is done. */
  private draining: Promise<void> | undefined;
  private stopped = false;
  private readonly forecaster: ExhaustionForecaster;
  private readonly view = new ViewFreshness();
  /** Bumped by every lead() and follow(): a list read for an older one is not loaded. */
  private leadGeneration = 0;
  private loading = false;
  /** Nodes whose action waits for a fresh view; queued again when it is. */
  private readonly waiting = new Set<string>();
  /** The reason last logged for waiting (logged once per change). */
  private waitLogged: string | undefined;
  /** The previous term's writes that may still land (term-fence.ts); set with the fresh lists. */
  private fence: TermFence | undefined;
  private fenceTimer: unknown;
  private fenceLogged = false;
  /** Deleted Nodes' kept addresses, read from their terminating NNCs (with `lists` only). */
  private readonly quarantine = new QuarantineBook();
  private readonly quarantineTimers = new Map<string, unknown>();
  /** Looks for a quarantined node's pods: none left ends its quarantine early. */
  private readonly quarantinePods: QuarantinePods | undefined;
  private readonly pauses = new Set<() => void>();

  constructor(deps: FulfillerDeps) {
    this.deps = deps;
    this.log = deps.logger;
    this.clock = deps.clock ?? realClock;
    this.ledger = deps.ledger;
    this.forecaster = new ExhaustionForecaster(deps.config.forecast);
    this.selected = nodeSelector(deps.config.nodeSelector);
    const canWrite = deps.canWrite ?? (() => true);
    this.ctx = {
      config: deps.config,
      backend: deps.backend,
      ledger: deps.ledger,
      nncApi: deps.nncApi,
      lifecycleApi: deps.lifecycleApi,
      log: this.log,
      events: deps.events ?? noopEventRecorder,
      metrics: deps.metrics,
      newId: deps.newId ?? randomUUID,
      counters: this.counters,
      invalidReported: new Map(),
      setupReported: new Map(),
      doubts: new Map(),
      now: () => this.clock.now(),
      node: (name) => this.nodes.get(name),
      selected: this.selected,
      ...(deps.lists ? { quarantine: this.quarantine } : {}),
      quarantineState: (name) => this.quarantineState(name),
      removed: (nnc) => this.remove(nnc),
      ...(deps.lists?.nodeExists
        ? { confirmNode: (name: string) => deps.lists!.nodeExists!(name) }
        : {}),
      armQuarantine: (name, until) => this.armQuarantine(name, until),
      allocationWait: (name) => this.fence?.waitReason(this.fenceView(), this.clock.now(), name),
      waitFor: (name, reason) => {
        this.waiting.add(name);
        if (this.fenceLogged) return;
        this.fenceLogged = true;
        this.log.warn('allocations wait', { node: name, reason });
      },
      guard: () => {
        if (!this.term || !canWrite()) throw new NotLeaderError('this replica does not lead');
      },
      subnetsChanged: (freed) => {
        this.sampleSubnets();
        this.publishSubnets();
        if (freed) this.wakeShortNodes();
      },
    };
    const presence = deps.lists?.anyPodOn ? deps.lists : undefined;
    this.quarantinePods = presence
      ? new QuarantinePods({
          presence: { anyPodOn: (node) => presence.anyPodOn!(node) },
          clock: this.clock,
          intervalMs: deps.config.quarantinePodCheckMs,
          backoff: deps.config.backoff,
          ...(deps.random ? { random: deps.random } : {}),
          log: this.log,
          wanted: (node) => this.wantLead && this.quarantined(node),
          gone: (node) => this.endQuarantine(node),
        })
      : undefined;
    deps.metrics?.setSource(() => this.gauges());
    deps.backend.attach?.({
      nodeNeedsRound: (name) => this.touch(name),
      addressesFreed: () => this.ctx.subnetsChanged(true),
      warn: (name, reason, message) => {
        const nnc = this.ledger.nnc(name);
        if (nnc && this.term && canWrite()) warn(this.ctx, nnc, reason, message);
      },
    });
    // However an address comes free (a status read without it, a deleted
    // NNC, a settled doubt), nodes left short get another go, once per tick.
    let wakeQueued = false;
    this.ledger.subscribe((_ip, used) => {
      if (used || wakeQueued) return;
      wakeQueued = true;
      queueMicrotask(() => {
        wakeQueued = false;
        this.ctx.subnetsChanged(true);
      });
    });
  }

  /** A watched NNC was added or changed (or read by a re-list). */
  upsert(nnc: NodeNetworkConfig): void {
    const name = nnc?.metadata?.name;
    if (this.stopped || !name) return;
    const previous = this.ledger.nnc(name);
    const uid = nnc.metadata.uid;
    const newer = isNewer(
      rvNumber(nnc.metadata.resourceVersion),
      rvNumber(previous?.metadata.resourceVersion),
    );
    if (previous && uid && previous.metadata.uid && previous.metadata.uid !== uid && newer) {
      // Deleted and recreated while the watch was away: the deletion first.
      this.ledger.deleted(previous, this.keepsOnDeletion(name));
    }
    if (this.ledger.observe(nnc)) {
      this.keepRestoreRecord(nnc);
      this.touch(name);
      this.fenceMoved();
    }
  }

  /**
   * A successor NNC's restore annotation (quarantine.ts) keeps the addresses
   * it names in use until its status holds them, whichever leader created it.
   */
  private keepRestoreRecord(nnc: NodeNetworkConfig): void {
    const containers = restoreRecord(nnc);
    const name = nnc.metadata.name;
    if (!containers || this.ledger.retained(name) || statusHolds(nnc.status, containers)) return;
    this.ledger.retain(name, containers);
  }

  /**
   * A watched NNC was deleted: its addresses stay in use while its Node
   * lives, and while its quarantine is not over (an NNC that left without the
   * addresses finalizer, or with it removed by hand).
   */
  remove(nnc: NodeNetworkConfig): void {
    const name = nnc?.metadata?.name;
    if (this.stopped || !name) return;
    const retain = this.keepsOnDeletion(name);
    if (!this.ledger.deleted(nnc, retain)) return;
    this.ctx.invalidReported.delete(name);
    this.ctx.setupReported?.delete(name);
    this.log.info(retain ? 'node network config deleted under a live node' : 'node removed', {
      node: name,
    });
    this.touch(name);
    this.ctx.subnetsChanged(!retain);
    this.fenceMoved();
  }

  /**
   * The NNC watch completed a full list: `all` is every NNC, current at
   * `listRv` (when the watch knows it; else the newest item's version).
   */
  synced(all: NodeNetworkConfig[], listRv?: string): void {
    if (this.stopped) return;
    // An NNC known only from a write's answer that a re-list no longer holds
    // was deleted (the watch never showed it, so no deletion comes): absent,
    // and older than the newest version listed, it is gone (found by the
    // interleaving explorer).
    this.loadNncs(all, listRv ?? newestVersion(all));
    this.nncsListed = true;
    this.sampleSubnets(); // the forecast's first point: what is free once the NNCs are known
    this.watchUp('nnc');
    this.maybeStartTerm();
  }

  /** What a deleted NNC held stays in use: its Node lives (or is not known yet), or its quarantine is not over. */
  private keepsOnDeletion(name: string): boolean {
    if (this.nodes.has(name) || !this.nodesListed) return true;
    return this.deps.lists !== undefined && this.quarantineState(name) !== 'over';
  }

  /** A watched Node was added or changed (an older version than already read is ignored). */
  upsertNode(node: NodeObject): void {
    const info = nodeInfo(node);
    if (this.stopped || !info || !this.newerNode(info.name, node)) return;
    const before = this.nodes.get(info.name);
    this.nodes.set(info.name, info);
    if (!before || !jsonEqual(before, info)) this.touch(info.name);
  }

  /** A watched Node was deleted: its NNC goes, and its addresses are freed. */
  removeNode(node: NodeObject): void {
    const name = node?.metadata?.name;
    // A re-list reports a deletion with the last version it had cached: the same one counts.
    if (this.stopped || !name || !this.newerNode(name, node, true)) return;
    if (!this.nodes.delete(name)) return;
    this.log.info('node deleted', { node: name });
    this.touch(name);
  }

  private newerNode(name: string, node: NodeObject, orSame = false): boolean {
    const rv = rvNumber(node.metadata?.resourceVersion);
    const seen = this.nodeVersions.get(name);
    if (!isNewer(rv, seen) && !(orSame && rv === seen)) return false;
    if (rv !== undefined) this.nodeVersions.set(name, rv);
    return true;
  }

  /** The Node watch completed a full list (current at `listRv`, as for synced()). */
  nodesSynced(all: NodeObject[], listRv?: string): void {
    if (this.stopped) return;
    // Likewise a Node known only from a term's fresh list (the watch was
    // down when it came and went): absent from the re-list, it is gone.
    this.loadNodes(all, listRv ?? newestVersion(all));
    this.nodesListed = true;
    this.watchUp('node');
    this.maybeStartTerm();
  }

  /** This replica holds the lease: start working (once both watches listed). */
  lead(): void {
    if (this.stopped) return;
    this.wantLead = true;
    this.leadGeneration++;
    this.view.unload();
    if (this.deps.lists) void this.loadFreshLists();
    else this.maybeStartTerm();
  }

  /** A watch failed or waits to restart: nothing is allocated until it runs and has listed again. */
  watchDown(source: ViewSource, reason: string): void {
    if (this.stopped) return;
    this.view.down(source, reason, this.clock.now());
    this.noteWaiting();
  }

  /** A watch listed and runs again. */
  watchUp(source: ViewSource): void {
    if (this.stopped) return;
    this.view.up(source);
    this.noteWaiting();
    if (this.view.waitReason(this.clock.now()) === undefined) this.wakeWaiting();
  }

  /** Why the fulfiller's actions wait now (a watch down, the term's lists not read yet); undefined when they do not. */
  waitReason(): string | undefined {
    const down = this.view.waitReason(this.clock.now());
    if (down) return down;
    if (this.wantLead && !this.term && this.deps.lists && !this.view.isLoaded) return FRESH_LISTS;
    return undefined;
  }

  /** Logs a change of why actions wait (once per change, not per node). */
  private noteWaiting(): void {
    const reason = this.waitReason();
    if (reason === this.waitLogged) return;
    const before = this.waitLogged;
    this.waitLogged = reason;
    if (!this.wantLead) return;
    // A new term's fresh lists are every normal start's wait: info, not a warning.
    if (reason)
      this.log[reason === FRESH_LISTS ? 'info' : 'warn']('allocations wait', {
        reason,
        view: this.view.statement(),
      });
    else if (before) this.log.info('allocations resume', { view: this.view.statement() });
  }

  /**
   * Lists the NNCs and Nodes afresh after the Lease was taken and loads them
   * (a list read for an earlier lead() is thrown away); retried with backoff
   * while this replica still wants to lead. Then the term starts.
   */
  private async loadFreshLists(): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    const backoff = new Backoff(this.deps.config.backoff, this.deps.random);
    try {
      this.noteWaiting();
      while (this.wantLead && !this.stopped && !this.view.isLoaded) {
        const generation = this.leadGeneration;
        try {
          const [nncs, nodes, pods] = await Promise.all([
            this.deps.lists!.listNncs(),
            this.deps.lists!.listNodes(),
            this.deps.lists!.listPodAddresses?.(),
          ]);
          if (generation !== this.leadGeneration || !this.wantLead || this.stopped) continue;
          this.loadNodes(nodes.items, nodes.resourceVersion);
          this.loadNncs(nncs.items, nncs.resourceVersion);
          this.loadQuarantine();
          if (pods) this.rescueFromPods(pods);
          this.view.loaded(nncs.resourceVersion, nodes.resourceVersion, this.clock.now());
          this.raiseFence();
          void this.moveFencedNncs(generation);
          this.log.info('fresh lists loaded', {
            nncs: nncs.items.length,
            nodes: nodes.items.length,
            nncListRv: nncs.resourceVersion,
            nodeListRv: nodes.resourceVersion,
          });
        } catch (err) {
          const delayMs = backoff.next();
          this.log.warn('new leader cannot list yet; nothing is allocated', {
            error: apiErrorInfo(err).message,
            retryInMs: delayMs,
          });
          await this.pause(delayMs);
        }
      }
    } finally {
      this.loading = false;
    }
    this.noteWaiting();
    this.maybeStartTerm();
  }

  /**
   * Addresses running pods report that no record holds (pod-rescue.ts) are
   * their node's again: kept for it in the ledger before anything is
   * allocated, then written into its NNC (created if need be), or
   * quarantined when its Node is gone, by the node's lifecycle.
   */
  private rescueFromPods(pods: PodAddresses[]): void {
    const backend = this.deps.backend;
    if (!backend.rebuild) return;
    const valid = backend.validAddress?.bind(backend) ?? (() => false);
    const { byNode, contested } = orphanedAddresses(pods, (ip) => this.ledger.isUsed(ip), valid);
    if (contested.length > 0)
      this.log.error('pods of two nodes report the same address, which no record holds', {
        addresses: contested.slice(0, 5),
        count: contested.length,
      });
    for (const [name, ips] of byNode) {
      const kept = this.ledger.retained(name);
      let containers: NetworkContainer[];
      if (kept) {
        containers = withRescued(kept, ips, this.ctx.newId);
        this.ledger.unretain(name);
      } else {
        const rebuilt = backend.rebuild({ name }, ips);
        if (!rebuilt) {
          this.log.error('addresses pods hold cannot be kept: no address left for a primary IP', {
            node: name,
            addresses: ips.length,
          });
          continue;
        }
        containers = [rebuilt];
      }
      this.ledger.retain(name, containers);
      this.log.warn('addresses running pods hold were in no record: kept for their node', {
        node: name,
        addresses: ips.length,
        nodeExists: this.nodes.has(name),
      });
      this.touch(name);
    }
  }

  /** Every terminating NNC of a gone Node, as listed, is a quarantine record. */
  private loadQuarantine(): void {
    this.quarantine.clear();
    for (const name of this.ledger.names()) this.quarantineState(name);
    if (this.quarantine.all().length > 0)
      this.log.info('quarantine loaded', {
        nodes: this.quarantine.all().length,
        addresses: this.quarantine.addresses(),
      });
  }

  /**
   * Where the node's quarantine stands (undefined without one). A terminating
   * NNC whose Node is gone is recorded the first time it is looked at, its
   * grace counted from its deletionTimestamp (quarantine.ts), so that any
   * leader, after any restart, finds the same record in its list.
   */
  private quarantineState(name: string): 'none' | 'held' | 'over' | undefined {
    if (!this.deps.lists) return undefined;
    if (!this.quarantine.get(name)) this.recordTerminating(name);
    if (!this.quarantine.get(name)) return 'none';
    return this.quarantine.holds(name, this.clock.now()) ? 'held' : 'over';
  }

  private recordTerminating(name: string): void {
    const nnc = this.ledger.nnc(name);
    if (!this.wantLead || !isTerminating(nnc) || this.nodes.has(name) || !this.nodesListed) return;
    const now = this.clock.now();
    const containers = dynamicContainers(nnc!);
    const addresses = addressesOf(containers).size;
    // Nothing to keep: over at once.
    const until = addresses > 0 ? quarantineEnd(nnc!, this.deps.config.quarantineMs, now) : now;
    this.quarantine.put({ node: name, until, containers: structuredClone(containers) });
    if (until > now) {
      this.armQuarantine(name, until);
      this.log.info('addresses of a deleted node quarantined', {
        node: name,
        addresses,
        until: new Date(until).toISOString(),
        record: 'terminating NodeNetworkConfig',
      });
    }
  }

  /** Kept for a deleted Node that has not re-registered. */
  private quarantined(name: string): boolean {
    return this.quarantine.holds(name, this.clock.now()) && !this.nodes.has(name);
  }

  /** No pod bound to the node is left: its quarantine is over now, not at its grace's end. */
  private endQuarantine(name: string): void {
    if (!this.quarantined(name)) return;
    this.quarantine.endNow(name, this.clock.now());
    this.clock.clearTimeout(this.quarantineTimers.get(name));
    this.quarantineTimers.delete(name);
    this.log.info('quarantine ends early: no pod is bound to the deleted node', { node: name });
    this.touch(name);
  }

  /** The node gets another go once its quarantine is over (or its pods are gone). */
  private armQuarantine(name: string, until: number): void {
    this.quarantinePods?.follow(name);
    this.clock.clearTimeout(this.quarantineTimers.get(name));
    this.quarantineTimers.set(
      name,
      this.clock.setTimeout(
        () => {
          this.quarantineTimers.delete(name);
          this.touch(name);
        },
        Math.max(0, until - this.clock.now()) + 1,
      ),
    );
  }

  /** Every NNC as listed may still receive a write of the previous term (term-fence.ts). */
  private raiseFence(): void {
    const listed: Array<[string, bigint]> = [];
    for (const name of this.ledger.names()) {
      const rv = rvNumber(this.ledger.nnc(name)?.metadata.resourceVersion);
      if (rv !== undefined) listed.push([name, rv]);
    }
    this.clock.clearTimeout(this.fenceTimer);
    this.fence = new TermFence(listed, this.clock.now(), UNANSWERED_WRITE_MS);
    this.fenceLogged = false;
    this.fenceTimer = this.clock.setTimeout(() => this.wakeWaiting(), UNANSWERED_WRITE_MS + 1);
  }

  /**
   * The new term's first write of every NNC it listed: a metadata-only
   * patch that moves its resourceVersion, so a previous leader's status
   * write based on an older version can never land (docs/decisions/0022).
   * An NNC this fails for stays fenced until read at a newer version or the
   * request timeout is over.
   */
  private async moveFencedNncs(generation: number): Promise<void> {
    const fence = this.fence;
    if (!fence) return;
    const term = this.ctx.newId();
    const backoff = new Backoff(this.deps.config.backoff, this.deps.random);
    const current = (): boolean =>
      generation === this.leadGeneration && !this.stopped && this.fence === fence;
    let names = [...this.ledger.names()];
    let moved = 0;
    const next = async (): Promise<void> => {
      for (let name = names.pop(); name !== undefined; name = names.pop()) {
        if (!current()) return;
        if (!fence.isOpen(this.fenceView(), this.clock.now(), name)) continue;
        try {
          if (!this.deps.canWrite || this.deps.canWrite()) {
            this.upsert(await this.deps.lifecycleApi.markTerm(name, term));
            moved++;
          }
        } catch (err) {
          if (apiErrorInfo(err).statusCode === 404) continue; // deleted: its deletion event comes
          this.log.warn('node network config not fenced', {
            node: name,
            error: apiErrorInfo(err).message,
          });
        }
      }
    };
    // Patches that failed are tried again (with backoff) while the fence stands.
    for (;;) {
      await Promise.all(Array.from({ length: this.deps.config.workers }, next));
      names = fence.unfenced(this.fenceView(), this.clock.now());
      if (names.length === 0 || !current()) break;
      const delayMs = backoff.next();
      await this.pause(delayMs);
      if (!current()) return;
    }
    if (current()) this.log.info('previous term fenced', { moved, term });
  }

  /** A retry's wait on the clock; follow() ends every one at once (nothing keeps a stopping process alive). */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.pauses.delete(done);
        this.clock.clearTimeout(handle);
        resolve();
      };
      const handle = this.clock.setTimeout(done, ms);
      this.pauses.add(done);
    });
  }

  private fenceView(): { version(name: string): bigint | undefined } {
    return { version: (n) => rvNumber(this.ledger.nnc(n)?.metadata.resourceVersion) };
  }

  /** Nodes that waited get another go (each waits again if it still must). */
  private wakeWaiting(): void {
    if (this.waiting.size === 0 || !this.term) return;
    const names = [...this.waiting];
    this.waiting.clear();
    for (const name of names) this.touch(name);
  }

  /** An NNC changed: nodes that waited for the fence get another go once it lets them. */
  private fenceMoved(): void {
    const fence = this.fence;
    if (!fence || this.waiting.size === 0) return;
    if (fence.openBeyond(this.fenceView(), this.clock.now(), undefined, 1).length <= 1)
      this.wakeWaiting();
  }

  private loadNodes(items: NodeObject[], listRv: string | undefined): void {
    for (const node of items) this.upsertNode(node);
    const listed = new Set<string>(items.map((n) => n?.metadata?.name ?? ''));
    const known = [...this.nodes.keys()].map((n): [string, bigint | undefined] => [
      n,
      this.nodeVersions.get(n),
    ]);
    for (const name of vanished(known, listed, listRv))
      this.removeNode({ metadata: { name, resourceVersion: listRv } } as NodeObject);
  }

  private loadNncs(items: NodeNetworkConfig[], listRv: string | undefined): void {
    for (const nnc of items) this.upsert(nnc);
    const listed = new Set<string>(items.map((n) => n?.metadata?.name ?? ''));
    const known = [...this.ledger.names()].map((n): [string, bigint | undefined] => [
      n,
      rvNumber(this.ledger.nnc(n)?.metadata.resourceVersion),
    ]);
    for (const name of vanished(known, listed, listRv)) {
      const last = this.ledger.nnc(name)!;
      this.remove({ ...last, metadata: { ...last.metadata, resourceVersion: listRv } });
    }
  }

  /** The lease is lost or being released: stop taking work, finish what runs. */
  async follow(): Promise<void> {
    this.wantLead = false;
    this.leadGeneration++;
    this.view.unload();
    this.waiting.clear();
    this.waitLogged = undefined;
    this.clock.clearTimeout(this.fenceTimer);
    this.fence = undefined;
    for (const t of this.quarantineTimers.values()) this.clock.clearTimeout(t);
    this.quarantineTimers.clear();
    this.quarantinePods?.clear();
    this.quarantine.clear();
    for (const done of [...this.pauses]) done();
    const term = this.term;
    if (!term) return this.draining;
    this.term = undefined;
    this.clock.clearTimeout(term.resyncTimer);
    const drain = (async () => {
      await term.queue.stop();
      await term.css.stop();
      this.log.info('fulfiller stands by');
    })();
    this.draining = drain;
    await drain;
    if (this.draining === drain) this.draining = undefined;
    this.maybeStartTerm();
  }

  get leading(): boolean {
    return this.term !== undefined;
  }

  /** Both watches have listed: the picture is complete. */
  get ready(): boolean {
    return this.nncsListed && this.nodesListed;
  }

  /** Queues every node that needs work (the periodic resync, also callable by tests). */
  resync(): void {
    if (!this.term || this.stopped) return;
    for (const name of this.names()) if (needsWork(this.ctx, name)) this.term.queue.enqueue(name);
    this.publishSubnets();
  }

  /** Resolves when no node has work queued or running and CSS writes are done. */
  async whenIdle(): Promise<void> {
    const term = this.term;
    if (!term) return;
    await term.queue.whenIdle();
    await term.css.settled();
  }

  /** Finishes actions in progress, then stops; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.follow();
  }

  stats(): FulfillerStats {
    const term = this.term;
    return {
      nodes: this.ledger.size,
      ...this.counters,
      pending: term?.queue.pending ?? 0,
      active: term?.queue.active ?? 0,
      leading: term !== undefined,
      subnets: this.deps.backend
        .subnets()
        .map((s) => ({ ...s, exhausted: term?.css.published(s.name) })),
    };
  }

  /** Every name the lifecycle may concern: NNCs, Nodes and retained addresses. */
  private names(): Set<string> {
    const names = new Set<string>(this.ledger.names());
    for (const name of this.nodes.keys()) names.add(name);
    for (const name of this.ledger.retainedNames()) names.add(name);
    return names;
  }

  private touch(name: string): void {
    const term = this.term;
    if (term && needsWork(this.ctx, name)) term.queue.enqueue(name);
  }

  private maybeStartTerm(): void {
    if (this.term || this.draining || !this.wantLead || this.stopped || !this.ready) return;
    if (this.deps.lists && !this.view.isLoaded) {
      void this.loadFreshLists();
      return;
    }
    const { config } = this.deps;
    const term: Term = {
      queue: this.newQueue(),
      css: this.newPublisher(),
      resyncTimer: undefined,
    };
    this.term = term;
    const arm = (): void => {
      term.resyncTimer = this.clock.setTimeout(() => {
        if (this.term !== term) return;
        this.resync();
        arm();
      }, config.resyncMs);
    };
    arm();
    this.log.info('fulfiller leads', {
      nodes: this.nodes.size,
      nncs: this.ledger.size,
      backend: this.deps.backend.kind,
      subnets: this.deps.backend.subnets().map((s) => `${s.name}=${s.cidr} free ${s.free}`),
      view: this.view.statement(),
    });
    this.resync();
  }

  private newQueue(): NodeQueue {
    const { config, metrics } = this.deps;
    return new NodeQueue({
      workers: config.workers,
      minIntervalMs: config.minIntervalMs,
      backoff: config.backoff,
      clock: this.clock,
      random: this.deps.random,
      priority: (name) => priorityFor(this.ctx, name),
      handler: async (name) => {
        // No action from a view that may miss changes: the node waits for it.
        if (this.waitReason() !== undefined) {
          this.waiting.add(name);
          this.noteWaiting();
          return;
        }
        const started = performance.now();
        let outcome = 'failed';
        try {
          outcome = await syncNode(this.ctx, name);
        } finally {
          metrics?.reconcile(outcome, (performance.now() - started) / 1000);
        }
      },
      onError: (name, error, retryInMs) => {
        this.counters.failures++;
        // Infinity (no retry before a change) would read `null` in the JSON log.
        this.log.warn('node action failed', {
          node: name,
          error: apiErrorInfo(error).message,
          ...(Number.isFinite(retryInMs) ? { retryInMs } : { waitsForChange: true }),
        });
      },
    });
  }

  private newPublisher(): ExhaustionPublisher {
    const { config } = this.deps;
    const events = this.ctx.events;
    return new ExhaustionPublisher({
      api: this.deps.cssApi,
      levels: exhaustionLevels(config.exhaustionThreshold, config.recoveryMargin),
      holdMs: config.exhaustionHoldMs,
      backoff: config.backoff,
      clock: this.clock,
      logger: this.log,
      random: this.deps.random,
      onChange: (subnet, exhausted) => {
        void events.recordEvent(
          {
            apiVersion: `${GROUP}/v1alpha1`,
            kind: 'ClusterSubnetState',
            name: subnet.name,
            namespace: config.namespace,
          },
          exhausted
            ? {
                type: 'Warning',
                reason: 'SubnetExhausted',
                message: `subnet ${subnet.cidr} has ${subnet.free} free addresses (threshold ${config.exhaustionThreshold})`,
              }
            : {
                type: 'Normal',
                reason: 'SubnetRecovered',
                message: `subnet ${subnet.cidr} has ${subnet.free} free addresses again`,
              },
        );
      },
    });
  }

  /** Free counts for the exhaustion forecast, on every replica (a standby forecasts too). */
  private sampleSubnets(subnets: SubnetInfo[] = this.deps.backend.subnets()): SubnetInfo[] {
    const now = this.clock.now();
    for (const s of subnets) this.forecaster.record(s.name, s.free, now);
    this.forecaster.keepOnly(new Set(subnets.map((s) => s.name)));
    return subnets;
  }

  private publishSubnets(): void {
    if (this.term && !this.stopped) this.term.css.update(this.deps.backend.subnets());
  }

  /** Addresses came free: nodes left short by a full subnet get another go. */
  private wakeShortNodes(): void {
    const term = this.term;
    if (!term || this.stopped) return;
    for (const name of this.ledger.names()) {
      if (this.ledger.nnc(name)?.status?.status === STATUS_SUBNET_FULL) term.queue.enqueue(name);
    }
  }

  private gauges(): FulfillerGauges {
    const nodesByState: Record<string, number> = {};
    const count = (state: string): void => {
      nodesByState[state] = (nodesByState[state] ?? 0) + 1;
    };
    for (const name of this.ledger.names()) {
      const nnc = this.ledger.nnc(name);
      if (isTerminating(nnc)) count('Terminating');
      else if (this.ctx.invalidReported.has(name)) count('Invalid');
      else count(nnc?.status?.status ?? 'New');
    }
    for (const name of this.ledger.retainedNames()) if (!this.ledger.nnc(name)) count('Retained');
    const term = this.term;
    return {
      nodesByState,
      queueDepth: term?.queue.pending ?? 0,
      subnets: this.sampleSubnets().map((s) => ({
        name: s.name,
        capacity: s.capacity,
        free: s.free,
        exhaustionForecastSeconds: this.forecaster.forecast(s.name, this.clock.now()),
        ...(term?.css.published(s.name) !== undefined
          ? { exhausted: term.css.published(s.name)! }
          : {}),
      })),
      addressConflicts: this.ledger.conflicts().length,
    };
  }
}
