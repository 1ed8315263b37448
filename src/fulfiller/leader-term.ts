// The leader term (docs/design/fulfiller.md#high-availability):
// lead() and follow() from the leader elector; on taking the Lease the NNCs,
// Nodes and pods are listed afresh and loaded before the first action, the
// previous term is fenced (fence-keeper.ts), and only then does a term run:
// the node queue, the ClusterSubnetState publisher and the periodic resync.
// While a watch is down or the lists are not read, nodes wait, and /readyz and
// the log say why (view.ts). follow() ends the term and waits for its actions.
import { Backoff } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { ClusterView } from './cluster-view.ts';
import type { FulfillerConfig } from './config.ts';
import { FenceKeeper } from './fence-keeper.ts';
import type { AddressLedger } from './ledger.ts';
import type { PodAddresses } from './pod-rescue.ts';
import type { ClusterListApi, NncLifecycleApi } from './ports.ts';
import type { QuarantineKeeper } from './quarantine-keeper.ts';
import type { ClockTimers } from '../clock/clock.ts';
import type { NodeQueue } from './queue.ts';
import type { ExhaustionPublisher } from './subnet-state.ts';
import { ViewFreshness } from './view.ts';
import type { ViewSource } from './view.ts';

/** Why allocations wait while a new term lists NNCs and Nodes afresh (every normal start). */
export const FRESH_LISTS = 'the new term lists the NodeNetworkConfigs and Nodes afresh';

/** A write was attempted while this replica does not lead. */
export class NotLeaderError extends Error {
  override readonly name = 'NotLeaderError';
}

/** What runs while this replica leads. */
export interface Term {
  queue: NodeQueue;
  css: ExhaustionPublisher;
  resyncTimer: unknown;
}

export interface LeaderTermDeps {
  config: FulfillerConfig;
  clock: ClockTimers;
  log: Logger;
  random?: () => number;
  newId: () => string;
  canWrite?: () => boolean;
  lists?: ClusterListApi;
  lifecycleApi: NncLifecycleApi;
  ledger: AddressLedger;
  view: ClusterView;
  quarantine: QuarantineKeeper;
  /**
   * Takes the pods' addresses into the records (pod-rescue.ts), after the
   * NNCs and Nodes are loaded; without it (a backend that keeps its own
   * record) no pod is listed.
   */
  rescue?(pods: PodAddresses[]): void;
  /** The node's lifecycle or status has work. */
  needsWork(name: string): boolean;
  /** A new term's parts. */
  newQueue(): NodeQueue;
  newPublisher(): ExhaustionPublisher;
  /** The term started (said in the log) and the first resync follows. */
  started(): void;
  /** Every resync also publishes the subnets' state. */
  resynced(): void;
}

export class LeaderTerm {
  private readonly d: LeaderTermDeps;
  private wantLead = false;
  private current: Term | undefined;
  /** The previous term still finishing its actions: no new term before it is done. */
  private draining: Promise<void> | undefined;
  private stopped = false;
  /** Bumped by every lead() and follow(): a list read for an older one is not loaded. */
  private generation = 0;
  private loading = false;
  readonly freshness = new ViewFreshness();
  /** Nodes whose action waits for a fresh view; queued again when it is. */
  private readonly waiting = new Set<string>();
  /** The reason last logged for waiting (logged once per change). */
  private waitLogged: string | undefined;
  readonly fence: FenceKeeper;
  private readonly pauses = new Set<() => void>();

  constructor(deps: LeaderTermDeps) {
    this.d = deps;
    this.fence = new FenceKeeper({
      ledger: deps.ledger,
      lifecycleApi: deps.lifecycleApi,
      clock: deps.clock,
      log: deps.log,
      workers: deps.config.workers,
      backoff: deps.config.backoff,
      ...(deps.random ? { random: deps.random } : {}),
      newId: deps.newId,
      ...(deps.canWrite ? { canWrite: deps.canWrite } : {}),
      observed: (nnc) => deps.view.upsertNnc(nnc),
      pause: (ms) => this.pause(ms),
      wake: () => this.wakeWaiting(),
    });
  }

  /** The running term, if this replica leads. */
  get term(): Term | undefined {
    return this.current;
  }

  /** This replica may write now: a term runs and the Lease is held and fresh. */
  get mayWrite(): boolean {
    return this.current !== undefined && (this.d.canWrite?.() ?? true);
  }

  /** Throws NotLeaderError unless this replica may write now. */
  guard(): void {
    if (!this.mayWrite) throw new NotLeaderError('this replica does not lead');
  }

  /** This replica holds (or is taking) the Lease. */
  get wanted(): boolean {
    return this.wantLead;
  }

  /** This replica holds the lease: start working (once both watches listed). */
  lead(): void {
    if (this.stopped) return;
    this.wantLead = true;
    this.generation++;
    this.freshness.unload();
    if (this.d.lists) void this.loadFreshLists();
    else this.maybeStart();
  }

  /** The lease is lost or being released: stop taking work, finish what runs. */
  async follow(): Promise<void> {
    this.wantLead = false;
    this.generation++;
    this.freshness.unload();
    this.waiting.clear();
    this.waitLogged = undefined;
    this.fence.lower();
    this.d.quarantine.clear();
    for (const done of [...this.pauses]) done();
    const term = this.current;
    if (!term) return this.draining;
    this.current = undefined;
    this.d.clock.clearTimeout(term.resyncTimer);
    const drain = (async () => {
      await term.queue.stop();
      await term.css.stop();
      this.d.log.info('fulfiller stands by');
    })();
    this.draining = drain;
    await drain;
    if (this.draining === drain) this.draining = undefined;
    this.maybeStart();
  }

  /** Finishes actions in progress, then stops for good. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.follow();
  }

  /** A watch failed or waits to restart: nothing is allocated until it runs and has listed again. */
  watchDown(source: ViewSource, reason: string): void {
    if (this.stopped) return;
    this.freshness.down(source, reason, this.d.clock.now());
    this.noteWaiting();
  }

  /** A watch listed and runs again. */
  watchUp(source: ViewSource): void {
    if (this.stopped) return;
    this.freshness.up(source);
    this.noteWaiting();
    if (this.freshness.waitReason(this.d.clock.now()) === undefined) this.wakeWaiting();
  }

  /** Why actions wait now (a watch down, the term's lists not read yet); undefined when they do not. */
  waitReason(): string | undefined {
    const down = this.freshness.waitReason(this.d.clock.now());
    if (down) return down;
    if (this.wantLead && !this.current && this.d.lists && !this.freshness.isLoaded)
      return FRESH_LISTS;
    return undefined;
  }

  /** The node waits for a fresh view (its handler found one missing). */
  waitForView(name: string): void {
    this.waiting.add(name);
    this.noteWaiting();
  }

  /**
   * The node waits for the fence: queued again when it may have opened. Its
   * run asks this when it ends, so a fence that opened for it while it ran
   * (its releases went on) queues it again at once.
   */
  waitForFence(name: string, reason: string): void {
    this.waiting.add(name);
    this.fence.noteWait(name, reason);
    if (this.fence.waitReason(name) !== undefined) return;
    this.waiting.delete(name);
    this.touch(name);
  }

  /** An NNC changed: nodes that waited for the fence get another go once it lets them. */
  nncMoved(): void {
    if (this.waiting.size > 0 && this.fence.mostlyOpen()) this.wakeWaiting();
  }

  /** Queues the node when it has work and a term runs. */
  touch(name: string): void {
    const term = this.current;
    if (term && this.d.needsWork(name)) term.queue.enqueue(name);
  }

  /** Queues every node that needs work (the periodic resync, also callable by tests). */
  resync(): void {
    if (!this.current || this.stopped) return;
    for (const name of this.d.view.names()) this.touch(name);
    this.d.resynced();
  }

  /** Starts a term when everything it needs is there. */
  maybeStart(): void {
    if (this.current || this.draining || !this.wantLead || this.stopped || !this.d.view.ready)
      return;
    if (this.d.lists && !this.freshness.isLoaded) {
      void this.loadFreshLists();
      return;
    }
    const term: Term = {
      queue: this.d.newQueue(),
      css: this.d.newPublisher(),
      resyncTimer: undefined,
    };
    this.current = term;
    const arm = (): void => {
      term.resyncTimer = this.d.clock.setTimeout(() => {
        if (this.current !== term) return;
        this.resync();
        arm();
      }, this.d.config.resyncMs);
    };
    arm();
    this.d.started();
    this.resync();
  }

  /** Logs a change of why actions wait (once per change, not per node). */
  private noteWaiting(): void {
    const reason = this.waitReason();
    if (reason === this.waitLogged) return;
    const before = this.waitLogged;
    this.waitLogged = reason;
    if (!this.wantLead) return;
    const view = this.freshness.statement();
    // A new term's fresh lists are every normal start's wait: info, not a warning.
    if (reason)
      this.d.log[reason === FRESH_LISTS ? 'info' : 'warn']('allocations wait', { reason, view });
    else if (before) this.d.log.info('allocations resume', { view });
  }

  /** Nodes that waited get another go (each waits again if it still must). */
  private wakeWaiting(): void {
    if (this.waiting.size === 0 || !this.current) return;
    const names = [...this.waiting];
    this.waiting.clear();
    for (const name of names) this.touch(name);
  }

  /**
   * Lists the NNCs, Nodes and pods afresh after the Lease was taken and
   * loads them (a list read for an earlier lead() is thrown away); retried
   * with backoff while this replica still wants to lead. Then the term starts.
   */
  private async loadFreshLists(): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    const { lists, view, log } = this.d;
    const backoff = new Backoff(this.d.config.backoff, this.d.random);
    try {
      this.noteWaiting();
      while (this.wantLead && !this.stopped && !this.freshness.isLoaded) {
        const generation = this.generation;
        try {
          const [nncs, nodes, pods] = await Promise.all([
            lists!.listNncs(),
            lists!.listNodes(),
            this.d.rescue ? lists!.listPodAddresses?.() : undefined,
          ]);
          if (generation !== this.generation || !this.wantLead || this.stopped) continue;
          view.loadNodes(nodes.items, nodes.resourceVersion);
          view.loadNncs(nncs.items, nncs.resourceVersion);
          this.d.quarantine.load(this.d.ledger.names());
          if (pods) this.d.rescue?.(pods);
          this.freshness.loaded(nncs.resourceVersion, nodes.resourceVersion, this.d.clock.now());
          this.fence.raise();
          void this.fence.moveAll(
            () => generation === this.generation && !this.stopped && this.wantLead,
          );
          log.info('fresh lists loaded', {
            nncs: nncs.items.length,
            nodes: nodes.items.length,
            nncListRv: nncs.resourceVersion,
            nodeListRv: nodes.resourceVersion,
          });
        } catch (err) {
          const delayMs = backoff.next();
          log.warn('new leader cannot list yet; nothing is allocated', {
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
    this.maybeStart();
  }

  /** A retry's wait on the clock; follow() ends every one at once (nothing keeps a stopping process alive). */
  private pause(ms: number): Promise<void> {
    const { clock } = this.d;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.pauses.delete(done);
        clock.clearTimeout(handle);
        resolve();
      };
      const handle = clock.setTimeout(done, ms);
      this.pauses.add(done);
    });
  }
}
