// One truth for the addresses in use (docs/design/fulfiller.md, "One truth
// for addresses in use: the ledger"). An address is in use while
//   - the newest version read of some NNC holds it in a dynamic container
//     (an event older than what was already read is ignored, whichever path
//     it came by: watch, re-list, re-read or a write's response), or
//   - an NNC deleted while its Node lives held it (retained until the NNC is
//     recreated with it, or the Node is confirmed gone), or
//   - a write in doubt may have put it into a status: a claim. A claim made
//     against resourceVersion B settles by itself as soon as a newer version
//     of that NNC is read: either the write landed (the status now holds the
//     address) or it can never land (its precondition B is stale). Claims
//     without a version are reservations of a round in progress. A write
//     that failed without saying whether it landed is a doubt, kept here with
//     its claims: a read still at its base version settles it only once the
//     API server's request timeout has passed since (`settleUnanswered`).
// Nothing else: no pool that only grows. Listeners hear each address turn
// used or free, so a backend can keep a bitmap of it.
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';

export type AddressListener = (ip: string, used: boolean) => void;

/**
 * kube-apiserver's default --request-timeout (1m0s): a write in doubt this
 * long after it failed can no longer land.
 */
export const UNANSWERED_WRITE_MS = 60_000;

/** A status write that failed without saying whether it landed (its claims stay). */
export interface Doubt {
  /** The resourceVersion it was based on. */
  base: string;
  /** The addresses it added, claimed. */
  ips: string[];
  /** The server's answer (a 5xx), if any: it proves nothing about the outcome (docs/design/fulfiller.md#high-availability). */
  code?: number;
  /** When it failed (ms on the fulfiller's clock). */
  at: number;
}

/** Parses a resourceVersion for ordering; undefined when it is not a number. */
export function rvNumber(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^\d{1,30}$/.test(rv) ? BigInt(rv) : undefined;
}

/** True when `next` is newer than `seen` (unknown versions always count as newer). */
export function isNewer(next: bigint | undefined, seen: bigint | undefined): boolean {
  return next === undefined || seen === undefined || next > seen;
}

/** Every address a status holds: each dynamic container's primary and secondary IPs. */
export function addressesOf(containers: readonly NetworkContainer[]): Set<string> {
  const out = new Set<string>();
  for (const nc of containers) {
    if (typeof nc?.primaryIP === 'string' && nc.primaryIP !== '') out.add(nc.primaryIP);
    for (const a of Array.isArray(nc?.ipAssignments) ? nc.ipAssignments : []) {
      if (typeof a?.ip === 'string' && a.ip !== '') out.add(a.ip);
    }
  }
  return out;
}

interface Entry {
  nnc: NodeNetworkConfig;
  addresses: Set<string>;
}

/** A claim's version: the resourceVersion the write was based on, or null while the round runs. */
type ClaimBase = bigint | null;

export class AddressLedger {
  private readonly live = new Map<string, Entry>();
  /** Newest resourceVersion read per NNC name, deletions included. */
  private readonly newest = new Map<string, bigint>();
  private readonly retainedBy = new Map<
    string,
    { containers: NetworkContainer[]; addresses: Set<string> }
  >();
  private readonly claims = new Map<string, Map<string, ClaimBase>>();
  /** Per node, the writes in doubt whose claims a read at their base version cannot settle yet. */
  private readonly doubts = new Map<string, Doubt[]>();
  private readonly refs = new Map<string, number>();
  private readonly listeners: AddressListener[] = [];

  /** Hears every address that turns used (true) or free (false). */
  subscribe(listener: AddressListener): void {
    this.listeners.push(listener);
  }

  /** Records an NNC read from anywhere; false (and nothing changes) for one older than already read. */
  observe(nnc: NodeNetworkConfig): boolean {
    const name = nnc?.metadata?.name;
    if (!name) return false;
    const rv = rvNumber(nnc.metadata.resourceVersion);
    if (!isNewer(rv, this.newest.get(name))) return false;
    if (rv !== undefined) this.newest.set(name, rv);
    const addresses = addressesOf(dynamicContainers(nnc));
    const before = this.live.get(name);
    this.live.set(name, { nnc, addresses });
    for (const ip of addresses) this.ref(ip, +1);
    if (before) for (const ip of before.addresses) this.ref(ip, -1);
    this.settleClaims(name, rv);
    return true;
  }

  /**
   * The NNC was deleted. With `retain` (its Node lives) the addresses it held
   * stay in use, remembered with its containers for the NNC's recreation.
   * A deletion of an older incarnation (another uid) or older version is ignored.
   */
  deleted(nnc: NodeNetworkConfig, retain: boolean): boolean {
    const name = nnc?.metadata?.name;
    if (!name) return false;
    const entry = this.live.get(name);
    const rv = rvNumber(nnc.metadata.resourceVersion);
    if (
      entry &&
      nnc.metadata.uid &&
      entry.nnc.metadata.uid &&
      nnc.metadata.uid !== entry.nnc.metadata.uid
    )
      return false;
    if (!entry && !isNewer(rv, this.newest.get(name))) return false;
    if (rv !== undefined && isNewer(rv, this.newest.get(name))) this.newest.set(name, rv);
    // The deletion event carries the final state: the newest of it and what was read.
    const last =
      entry && !isNewer(rv, rvNumber(entry.nnc.metadata.resourceVersion)) ? entry.nnc : nnc;
    if (retain && !this.retainedBy.has(name)) {
      const containers = dynamicContainers(last);
      const addresses = addressesOf(containers);
      if (addresses.size > 0) {
        this.retainedBy.set(name, { containers: structuredClone(containers), addresses });
        for (const ip of addresses) this.ref(ip, +1);
      }
    }
    this.live.delete(name);
    if (entry) for (const ip of entry.addresses) this.ref(ip, -1);
    // A write based on any version of a deleted NNC can never land.
    this.settleClaims(name, undefined, true);
    return true;
  }

  /** The Node is gone: its retained addresses and every claim of it are free. */
  forgetNode(name: string): void {
    this.unretain(name);
    this.doubts.delete(name);
    const mine = this.claims.get(name);
    if (mine) {
      this.claims.delete(name);
      for (const ip of mine.keys()) this.ref(ip, -1);
    }
  }

  /** Keeps a node's containers' addresses in use without an NNC (a quarantine); false if kept already. */
  retain(name: string, containers: NetworkContainer[]): boolean {
    if (this.retainedBy.has(name)) return false;
    const addresses = addressesOf(containers);
    if (addresses.size === 0) return false;
    this.retainedBy.set(name, { containers: structuredClone(containers), addresses });
    for (const ip of addresses) this.ref(ip, +1);
    return true;
  }

  /** The retained containers were written into the recreated NNC (or are no longer owed). */
  unretain(name: string): void {
    const kept = this.retainedBy.get(name);
    if (!kept) return;
    this.retainedBy.delete(name);
    for (const ip of kept.addresses) this.ref(ip, -1);
  }

  /**
   * The addresses of `containers` that the status of a live NNC other than
   * `name` holds: kept addresses that the cluster shows elsewhere.
   */
  heldElsewhere(name: string, containers: readonly NetworkContainer[]): string[] {
    const mine = addressesOf(containers);
    const out: string[] = [];
    for (const [other, e] of this.live)
      if (other !== name) for (const ip of e.addresses) if (mine.has(ip)) out.push(ip);
    return out;
  }

  /** The containers a deleted NNC held while its Node lives, to write into its successor. */
  retained(name: string): NetworkContainer[] | undefined {
    return this.retainedBy.get(name)?.containers;
  }

  /** Names whose NNC was deleted under a live Node and is not recreated with its addresses yet. */
  retainedNames(): string[] {
    return [...this.retainedBy.keys()];
  }

  /** The newest version read of a live NNC. */
  nnc(name: string): NodeNetworkConfig | undefined {
    return this.live.get(name)?.nnc;
  }

  /** Names of the live NNCs. */
  names(): IterableIterator<string> {
    return this.live.keys();
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Claims addresses for a node: `baseRv` is the resourceVersion the status
   * write carrying them is based on; without it, a reservation of a round in
   * progress (settled only by `unclaim` or by setting its version).
   */
  claim(node: string, ips: readonly string[], baseRv?: string): void {
    if (ips.length === 0) return;
    let mine = this.claims.get(node);
    if (!mine) this.claims.set(node, (mine = new Map()));
    const base: ClaimBase = baseRv === undefined ? null : (rvNumber(baseRv) ?? 0n);
    for (const ip of ips) {
      if (!mine.has(ip)) this.ref(ip, +1);
      mine.set(ip, base);
    }
  }

  /** Drops claims: the write carrying them was refused, so they are in no status. */
  unclaim(node: string, ips: readonly string[]): void {
    const mine = this.claims.get(node);
    if (!mine) return;
    for (const ip of ips) if (mine.delete(ip)) this.ref(ip, -1);
    if (mine.size === 0) this.claims.delete(node);
  }

  /**
   * The write that carried claims `ips` against `baseRv` failed without
   * saying whether it landed (a 5xx, a timeout, a reset): they stay claimed,
   * in doubt since `at`, until a newer version of the NNC is read or
   * `settleUnanswered` finds the request timeout over.
   */
  doubt(node: string, ips: string[], baseRv: string, at: number, code?: number): void {
    const doubts = this.doubts.get(node) ?? [];
    doubts.push({ base: baseRv, ips, ...(code !== undefined ? { code } : {}), at });
    this.doubts.set(node, doubts);
  }

  /**
   * The node's NNC was read at `rv`: a doubtful write based on that very
   * version has not landed, and once the request timeout has passed since it
   * failed it never will, whatever the answer was: its claims are dropped.
   * True when that freed any address.
   */
  settleUnanswered(node: string, rv: string | undefined, now: number): boolean {
    const doubts = this.doubts.get(node);
    if (!doubts) return false;
    const read = rvNumber(rv);
    let freed = false;
    const left = doubts.filter((d) => {
      const base = rvNumber(d.base);
      if (read === undefined || base === undefined || read > base) return false; // settled by the read
      if (read < base) return true;
      if (now - d.at < UNANSWERED_WRITE_MS) return true;
      this.unclaim(node, d.ips);
      freed ||= d.ips.length > 0;
      return false;
    });
    if (left.length > 0) this.doubts.set(node, left);
    else this.doubts.delete(node);
    return freed;
  }

  /** True while a node has claims from a write whose outcome is not known yet. */
  inDoubt(node: string): boolean {
    const mine = this.claims.get(node);
    if (!mine) return false;
    for (const base of mine.values()) if (base !== null) return true;
    return false;
  }

  isUsed(ip: string): boolean {
    return (this.refs.get(ip) ?? 0) > 0;
  }

  /** How many holders (statuses, retained NNCs, claims of other nodes) an address has. */
  holders(ip: string): number {
    return this.refs.get(ip) ?? 0;
  }

  /**
   * Whether a holder other than node `name` has `ip`: another NNC's status,
   * another node's claim, or another deleted node's kept addresses.
   */
  heldByOthers(name: string, ip: string): boolean {
    let own = 0;
    if (this.live.get(name)?.addresses.has(ip)) own++;
    if (this.retainedBy.get(name)?.addresses.has(ip)) own++;
    if (this.claims.get(name)?.has(ip)) own++;
    return this.holders(ip) > own;
  }

  /** Every address in use. */
  used(): IterableIterator<string> {
    return this.refs.keys();
  }

  /** Addresses held by more than one live NNC status: a conflict to report. */
  conflicts(): string[] {
    const seen = new Map<string, number>();
    for (const e of this.live.values())
      for (const ip of e.addresses) seen.set(ip, (seen.get(ip) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1).map(([ip]) => ip);
  }

  /** Drops claims whose write is settled by reading `rv` (or every versioned claim when `all`). */
  private settleClaims(name: string, rv: bigint | undefined, all = false): void {
    this.settleDoubts(name, rv, all);
    const mine = this.claims.get(name);
    if (!mine) return;
    for (const [ip, base] of mine) {
      if (base === null) continue;
      if (all || rv === undefined || rv > base) {
        mine.delete(ip);
        this.ref(ip, -1);
      }
    }
    if (mine.size === 0) this.claims.delete(name);
  }

  /** Doubts a read of `rv` settles (the write landed, or its base is stale) leave with their claims. */
  private settleDoubts(name: string, rv: bigint | undefined, all: boolean): void {
    const doubts = this.doubts.get(name);
    if (!doubts) return;
    const left = doubts.filter((d) => {
      const base = rvNumber(d.base);
      return !(all || rv === undefined || base === undefined || rv > base);
    });
    if (left.length > 0) this.doubts.set(name, left);
    else this.doubts.delete(name);
  }

  private ref(ip: string, delta: number): void {
    const before = this.refs.get(ip) ?? 0;
    const after = before + delta;
    if (after <= 0) this.refs.delete(ip);
    else this.refs.set(ip, after);
    if (before === 0 && after > 0) for (const l of this.listeners) l(ip, true);
    else if (before > 0 && after <= 0) for (const l of this.listeners) l(ip, false);
  }
}
