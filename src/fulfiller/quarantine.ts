// A deleted Node's addresses are quarantined (docs/design/fulfiller.md#quarantine).
// `kubectl delete node` (or a cloud controller) removes the Node object while
// its machine may still run its pods: the pod GC deletes pods bound to a
// missing node only after 40 s, their kubelet stops them after that, and a
// kubelet that is still alive re-registers its Node. So the addresses the
// node's NNC held are kept (not handed out) until no pod is bound to the
// node or the grace period is over, and given back as they were if the Node
// re-registers meanwhile.
// The record of a quarantine is the NNC itself: every NNC the fulfiller
// makes carries ADDRESSES_FINALIZER, so however it is deleted (by the
// fulfiller, by the garbage collector after its owner Node, by hand, while
// no fulfiller runs) it stays, terminating, with its status, until the
// fulfiller has freed its addresses and removed the finalizer. One record
// per node, bounded by the NNC's own size, found by any leader in its fresh
// list; the grace runs from the NNC's deletionTimestamp.
// Pure: the finalizer, the grace's end and the book of records the leader
// keeps in memory; the fulfiller acts on them.
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { addressesOf } from './ledger.ts';

export { RESTORE_ANNOTATION, isTerminating, restoreRecord } from '../nnc/types.ts';

/** While on an NNC, the addresses in its status are in use; only the fulfiller removes it. */
export const ADDRESSES_FINALIZER = 'pool-monitor.acn.azure.com/addresses';

export function hasAddressesFinalizer(nnc: NodeNetworkConfig | undefined): boolean {
  const f = nnc?.metadata.finalizers;
  return Array.isArray(f) && f.includes(ADDRESSES_FINALIZER);
}

/** The finalizers of `nnc` with ours added or removed, the others kept in their order. */
export function finalizersWith(nnc: NodeNetworkConfig, ours: boolean): string[] {
  const others = (nnc.metadata.finalizers ?? []).filter((f) => f !== ADDRESSES_FINALIZER);
  return ours ? [...others, ADDRESSES_FINALIZER] : others;
}

/**
 * When a terminating NNC's quarantine ends: its deletionTimestamp plus the
 * grace. A deletion time in the future of this clock (clock skew) or
 * unreadable counts from `now`, so a skewed clock lengthens the grace and
 * never shortens it.
 */
export function quarantineEnd(nnc: NodeNetworkConfig, graceMs: number, now: number): number {
  const deleted = Date.parse(nnc.metadata.deletionTimestamp ?? '');
  return (Number.isFinite(deleted) ? Math.min(deleted, now) : now) + graceMs;
}

/** What is kept for one deleted Node. */
export interface QuarantineRecord {
  node: string;
  /** When the addresses may be freed (ms since the epoch). */
  until: number;
  /** The node's dynamic containers as its NNC last held them. */
  containers: NetworkContainer[];
}

/** The records the leader knows, by node name. */
export class QuarantineBook {
  private readonly records = new Map<string, QuarantineRecord>();

  get(node: string): QuarantineRecord | undefined {
    return this.records.get(node);
  }

  /** True while the node's addresses must stay kept. */
  holds(node: string, now: number): boolean {
    const r = this.records.get(node);
    return r !== undefined && now < r.until;
  }

  /** Its quarantine is over from `now` on (its pods are gone). */
  endNow(node: string, now: number): void {
    const r = this.records.get(node);
    if (r && r.until > now) r.until = now;
  }

  put(record: QuarantineRecord): void {
    this.records.set(record.node, record);
  }

  drop(node: string): boolean {
    return this.records.delete(node);
  }

  clear(): void {
    this.records.clear();
  }

  all(): QuarantineRecord[] {
    return [...this.records.values()];
  }

  /** How many addresses are quarantined. */
  addresses(): number {
    let n = 0;
    for (const r of this.records.values()) n += addressesOf(r.containers).size;
    return n;
  }
}
