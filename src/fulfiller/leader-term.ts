// The leader term (docs/design/fulfiller.md#high-availability): lead() and
// follow() from the leader elector. On taking the Lease the NNCs, Nodes and
// pods are listed afresh and loaded into the book, which then begins the
// term: its memory starts empty, every NNC listed is fenced (fence.ts), and
// only then does the term run: the node queue, the ClusterSubnetState
// publisher and the periodic resync. While a watch is down or the lists are
// not read, nothing runs, and /readyz and the log say why (view.ts).
// follow() ends the term, its memory with it, and waits for its actions.
import { randomUUID } from 'node:crypto';
import { Backoff } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { ClockTimers } from '../clock/clock.ts';
import { UNANSWERED_WRITE_MS } from './address-index.ts';
import type { FulfillerConfig } from './config.ts';
import { markEveryNnc } from './fence.ts';
import type { NodeBook } from './node-book.ts';
import { nextSeq } from './node-book.ts';
import type { PodAddresses } from './pod-rescue.ts';
import type { ClusterListApi, NncLifecycleApi } from './ports.ts';
import type { NodeQueue } from './queue.ts';
import type { ExhaustionPublisher } from './subnet-state.ts';
import { ViewFreshness } from './view.ts';
import type { ViewSource } from './view.ts';

/** Why allocations wait while a new term lists NNCs and Nodes afresh (every normal start). */
export const FRESH_LISTS = 'the new term lists the NodeNetworkConfigs and Nodes afresh';

/** At most this many NNCs known in more than one state are read afresh per resync. */
const AMBIGUOUS_READS = 50;

/** A write was attempted while this replica does not lead. */
export class NotLeaderError extends Error {
  override readonly name = 'NotLeaderError';
}

/** What runs while this replica leads. */
export interface Term {
  queue: NodeQueue;
  css: ExhaustionPublisher;
  timers: unknown[];
}

/** The parts a term runs, made afresh for each (the reconciler's queue, the CSS publisher). */
export interface TermParts {
  newQueue(): NodeQueue;
  newPublisher(): ExhaustionPublisher;
  /** The name has work (the resync and every change ask it). */
  needsWork(name: string): boolean;
  /** Reads the name's NNC afresh into the book (an ambiguous one, at the resync). */
  reread(name: string): void;
  /** Takes the pods' addresses into the book (pod-rescue.ts); absent: no pod is listed. */
  rescue?(pods: PodAddresses[]): void;
  /** The term started; every resync also publishes the subnets. */
  started(): void;
  resynced(): void;
}

export interface LeaderTermDeps {
  config: FulfillerConfig;
  clock: ClockTimers;
  log: Logger;
  book: NodeBook;
  lists: ClusterListApi;
  lifecycleApi: NncLifecycleApi;
  random?: () => number;
  newId?: () => string;
  canWrite?: () => boolean;
}

export class LeaderTerm {
  private readonly d: LeaderTermDeps;
  private parts: TermParts | undefined;
  private wantLead = false;
  private current: Term | undefined;
  /** The previous term still finishing its actions: no new term before it is done. */
  private draining: Promise<void> | undefined;
  private stopped = false;
  /** Bumped by every lead() and follow(): a list read for an older one is not loaded. */
  private generation = 0;
  private loading = false;
  private loaded = false;
  readonly freshness = new ViewFreshness();
  private watchesListed = { nnc: false, node: false };
  /** The reason last logged for waiting (logged once per change). */
  private waitLogged: string | undefined;
  /** A node's allocation waited for the fence: said once per term. */
  private fenceWaitSaid = false;
  private readonly pauses = new Set<() => void>();

  constructor(deps: LeaderTermDeps) {
    this.d = deps;
    // Every change of a name may give it work; an NNC that moved may open the fence.
    deps.book.listen({
      changed: (name) => this.touch(name),
      nncMoved: () => {
        if (deps.book.fenceMostlyOpen) this.wakeWaiting();
      },
    });
  }

  /** The parts each term runs (the reconciler's): given once, after they are built. */
  runs(parts: TermParts): void {
    this.parts = parts;
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

  /** This replica holds the lease: start working once the fresh lists are loaded. */
  lead(): void {
    if (this.stopped) return;
    this.wantLead = true;
    this.generation++;
    this.loaded = false;
    this.freshness.unload();
    void this.loadFreshLists();
  }

  /** The lease is lost or being released: stop taking work, finish what runs; the term's memory goes. */
  async follow(): Promise<void> {
    this.wantLead = false;
    this.generation++;
    this.loaded = false;
    this.freshness.unload();
    this.waitLogged = undefined;
    this.d.book.endTerm();
    for (const done of [...this.pauses]) done();
    const term = this.current;
    if (!term) return this.draining;
    this.current = undefined;
    for (const t of term.timers) this.d.clock.clearTimeout(t);
    const drain = (async () => {
      await term.queue.stop();
      await term.css.stop();
      this.d.log.info('fulfiller stands by');
    })();
    this.draining = drain;
    await drain;
    if (this.draining === drain) this.draining = undefined;
    this.d.book.endTerm(); // what the last runs kept goes too
    this.maybeStart();
  }

  /** Finishes actions in progress, then stops for good. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.follow();
  }

  /** A watch failed or waits to restart: nothing runs until it runs and has listed again. */
  watchDown(source: ViewSource, reason: string): void {
    if (this.stopped) return;
    this.freshness.down(source, reason, this.d.clock.now());
    this.noteWaiting();
  }

  /** A watch listed and runs again. */
  watchUp(source: ViewSource): void {
    if (this.stopped) return;
    this.watchesListed[source] = true;
    const waited = this.freshness.waitReason(this.d.clock.now()) !== undefined;
    this.freshness.up(source);
    this.noteWaiting();
    // Runs skipped while the view could miss changes: every name is looked at again.
    if (waited && this.waitReason() === undefined) this.resync();
    this.maybeStart();
  }

  /** Why runs wait now (a watch down, the term's lists not read yet); undefined when they do not. */
  waitReason(): string | undefined {
    const down = this.freshness.waitReason(this.d.clock.now());
    if (down) return down;
    if (this.wantLead && !this.current && !this.loaded) return FRESH_LISTS;
    return undefined;
  }

  /** A node's new addresses wait for the previous term's fence: said once per term. */
  noteFenceWait(name: string, reason: string): void {
    if (this.fenceWaitSaid || !this.current) return;
    this.fenceWaitSaid = true;
    this.d.log.warn('allocations wait', { node: name, reason });
  }

  /** Queues the name when it has work and a term runs. */
  touch(name: string): void {
    const term = this.current;
    if (term && this.parts?.needsWork(name)) term.queue.enqueue(name);
  }

  /** Queues the name whatever it seems to need (addresses came free: a node left short tries again). */
  enqueue(name: string): void {
    this.current?.queue.enqueue(name);
  }

  /** Queues every name that has work (the periodic resync, also callable by tests). */
  resync(): void {
    if (!this.current || this.stopped) return;
    this.d.book.sweep();
    for (const name of this.d.book.ambiguous().slice(0, AMBIGUOUS_READS)) this.parts?.reread(name);
    for (const name of this.d.book.names()) this.touch(name);
    this.parts?.resynced();
  }

  /** Nodes whose allocation waited (for the fence) get another go, once: each waits again if it must. */
  wakeWaiting(): void {
    if (!this.current) return;
    for (const r of this.d.book.waiting()) {
      this.d.book.wait(r, undefined);
      this.touch(r.name);
    }
  }

  /** Starts a term when everything it needs is there. */
  private maybeStart(): void {
    const { book, config, clock } = this.d;
    if (this.current || this.draining || !this.wantLead || this.stopped || !this.loaded) return;
    if (!this.watchesListed.nnc || !this.watchesListed.node || !this.parts) return;
    const term: Term = {
      queue: this.parts.newQueue(),
      css: this.parts.newPublisher(),
      timers: [],
    };
    this.current = term;
    this.fenceWaitSaid = false;
    const generation = this.generation;
    const arm = (): void => {
      term.timers[0] = clock.setTimeout(() => {
        if (this.current !== term) return;
        this.resync();
        arm();
      }, config.resyncMs);
    };
    arm();
    // Whatever waited for the fence goes once its time is over.
    term.timers[1] = clock.setTimeout(() => this.wakeWaiting(), UNANSWERED_WRITE_MS + 1);
    void markEveryNnc({
      book,
      lifecycleApi: this.d.lifecycleApi,
      log: this.d.log,
      workers: config.workers,
      backoff: config.backoff,
      ...(this.d.random ? { random: this.d.random } : {}),
      term: (this.d.newId ?? randomUUID)(),
      current: () => generation === this.generation && this.current === term && this.mayWrite,
      pause: (ms) => this.pause(ms),
    });
    this.parts.started();
    this.resync();
  }

  /** Logs a change of why runs wait (once per change, not per node). */
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

  /**
   * Lists the NNCs, Nodes and pods afresh after the Lease was taken and
   * loads them (a list read for an earlier lead() is thrown away); retried
   * with backoff while this replica still wants to lead. Then the term begins.
   */
  private async loadFreshLists(): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    const { lists, book, log, config } = this.d;
    const backoff = new Backoff(config.backoff, this.d.random);
    try {
      this.noteWaiting();
      while (this.wantLead && !this.stopped && !this.loaded) {
        const generation = this.generation;
        try {
          const sent = nextSeq();
          const [nncs, nodes, pods] = await Promise.all([
            lists.listNncs(),
            lists.listNodes(),
            this.parts?.rescue ? lists.listPodAddresses?.() : undefined,
          ]);
          if (generation !== this.generation || !this.wantLead || this.stopped) continue;
          // Before the draining term's last runs are over, no new memory may begin.
          await this.draining;
          if (generation !== this.generation || !this.wantLead || this.stopped) continue;
          book.listed('node', nodes.items, sent, false);
          book.listed('nnc', nncs.items, sent, false);
          book.beginTerm(config.quarantineMs, UNANSWERED_WRITE_MS);
          if (pods) this.parts?.rescue?.(pods);
          this.loaded = true;
          this.freshness.loaded(nncs.resourceVersion, nodes.resourceVersion, this.d.clock.now());
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
