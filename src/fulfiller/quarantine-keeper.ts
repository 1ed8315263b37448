// The leader's quarantine (docs/design/fulfiller.md#quarantine): the book of
// records read from terminating NNCs of gone Nodes (quarantine.ts), a timer
// per record for its grace's end, and the look for its pods that ends it
// early (quarantine-pods.ts). All of it is the term's: follow() clears it,
// and the next leader reads the same records from its fresh list.
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Logger } from '../log/logger.ts';
import { dynamicContainers } from '../nnc/types.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { AddressLedger } from './ledger.ts';
import { addressesOf } from './ledger.ts';
import type { ClusterListApi } from './ports.ts';
import { QuarantineBook, isTerminating, quarantineEnd } from './quarantine.ts';
import { QuarantinePods } from './quarantine-pods.ts';
import type { ClockTimers } from '../clock/clock.ts';

export type QuarantineState = 'none' | 'held' | 'over';

export interface QuarantineKeeperDeps {
  ledger: AddressLedger;
  clock: ClockTimers;
  log: Logger;
  graceMs: number;
  podCheckMs: number;
  backoff: BackoffOptions;
  random?: () => number;
  /** Without lists (in-memory tests) there is no quarantine: addresses are freed with their Node. */
  lists?: ClusterListApi;
  /** The Node is in the view, and whether the view has listed Nodes at all. */
  hasNode(name: string): boolean;
  nodesKnown(): boolean;
  /** This replica wants to lead (records are the leader's). */
  leading(): boolean;
  /** The node gets another look (its quarantine ended, early or at its grace). */
  touch(name: string): void;
}

export class QuarantineKeeper {
  /** Deleted Nodes' kept addresses, read from their terminating NNCs (or held in memory only). */
  private readonly book = new QuarantineBook();
  private readonly timers = new Map<string, unknown>();
  /** Looks for a quarantined node's pods: none left ends its quarantine early. */
  private readonly pods: QuarantinePods | undefined;
  private readonly d: QuarantineKeeperDeps;

  constructor(deps: QuarantineKeeperDeps) {
    this.d = deps;
    const presence = deps.lists?.anyPodOn ? deps.lists : undefined;
    this.pods = presence
      ? new QuarantinePods({
          presence: { anyPodOn: (node) => presence.anyPodOn!(node) },
          clock: deps.clock,
          intervalMs: deps.podCheckMs,
          backoff: deps.backoff,
          ...(deps.random ? { random: deps.random } : {}),
          log: deps.log,
          wanted: (node) => deps.leading() && this.quarantined(node),
          gone: (node) => this.endEarly(node),
        })
      : undefined;
  }

  /** There is a quarantine at all (the fulfiller lists afresh; not in in-memory tests). */
  get enabled(): boolean {
    return this.d.lists !== undefined;
  }

  /** What a deleted NNC held stays in use: its Node lives (or is not known yet), or its quarantine is not over. */
  keepsOnDeletion(name: string): boolean {
    if (this.d.hasNode(name) || !this.d.nodesKnown()) return true;
    return this.enabled && this.state(name) !== 'over';
  }

  /** Every terminating NNC of a gone Node, as listed, is a quarantine record. */
  load(names: Iterable<string>): void {
    this.book.clear();
    for (const name of names) this.state(name);
    if (this.book.all().length > 0)
      this.d.log.info('quarantine loaded', {
        nodes: this.book.all().length,
        addresses: this.book.addresses(),
      });
  }

  /**
   * Where the node's quarantine stands (undefined without one). A terminating
   * NNC whose Node is gone is recorded the first time it is looked at, its
   * grace counted from its deletionTimestamp (quarantine.ts), so that any
   * leader, after any restart, finds the same record in its list.
   */
  state(name: string): QuarantineState | undefined {
    if (!this.enabled) return undefined;
    if (!this.book.get(name)) this.recordTerminating(name);
    if (!this.book.get(name)) return 'none';
    return this.book.holds(name, this.d.clock.now()) ? 'held' : 'over';
  }

  private recordTerminating(name: string): void {
    const nnc = this.d.ledger.nnc(name);
    const { clock, graceMs, log } = this.d;
    if (!this.d.leading() || !isTerminating(nnc) || this.d.hasNode(name) || !this.d.nodesKnown())
      return;
    const now = clock.now();
    const containers = dynamicContainers(nnc!);
    const addresses = addressesOf(containers).size;
    // Nothing to keep: over at once.
    const until = addresses > 0 ? quarantineEnd(nnc!, graceMs, now) : now;
    this.book.put({ node: name, until, containers: structuredClone(containers) });
    if (until > now) {
      this.arm(name, until);
      log.info('addresses of a deleted node quarantined', {
        node: name,
        addresses,
        until: new Date(until).toISOString(),
        record: 'terminating NodeNetworkConfig',
      });
    }
  }

  /** Kept for a deleted Node that has not re-registered. */
  private quarantined(name: string): boolean {
    return this.book.holds(name, this.d.clock.now()) && !this.d.hasNode(name);
  }

  /** No pod bound to the node is left: its quarantine is over now, not at its grace's end. */
  private endEarly(name: string): void {
    if (!this.quarantined(name)) return;
    this.book.endNow(name, this.d.clock.now());
    this.d.clock.clearTimeout(this.timers.get(name));
    this.timers.delete(name);
    this.d.log.info('quarantine ends early: no pod is bound to the deleted node', { node: name });
    this.d.touch(name);
  }

  /**
   * A deleted Node's addresses whose NNC left without the addresses
   * finalizer: kept in this leader's memory only, until `until`
   * (docs/design/fulfiller.md#quarantine).
   */
  hold(name: string, until: number, containers: NetworkContainer[]): void {
    this.book.put({ node: name, until, containers });
    this.arm(name, until);
  }

  /** The node's record goes: its addresses are restored, freed, or held by another node. */
  end(name: string): void {
    this.book.drop(name);
  }

  /** The node gets another go once its quarantine is over (or its pods are gone). */
  private arm(name: string, until: number): void {
    const { clock } = this.d;
    this.pods?.follow(name);
    clock.clearTimeout(this.timers.get(name));
    this.timers.set(
      name,
      clock.setTimeout(
        () => {
          this.timers.delete(name);
          this.d.touch(name);
        },
        Math.max(0, until - clock.now()) + 1,
      ),
    );
  }

  /** The term ended: every record, timer and look goes (the next leader reads them again). */
  clear(): void {
    for (const t of this.timers.values()) this.d.clock.clearTimeout(t);
    this.timers.clear();
    this.pods?.clear();
    this.book.clear();
  }
}
