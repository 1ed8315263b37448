// A deleted Node's addresses are quarantined (docs/design/fulfiller.md#quarantine).
// `kubectl delete node` (or a cloud controller) removes the Node object while
// its machine may still run its pods: the pod GC deletes pods bound to a
// missing node only after 40 s, their kubelet stops them after that, and a
// kubelet that is still alive re-registers its Node. So the addresses the
// node's NNC held are kept (not handed out) until no pod is bound to the
// node or the grace period is over, and given to the Node if it comes back
// meanwhile.
// The record of a quarantine is the NNC itself (docs/decisions/0030): every
// NNC the fulfiller makes carries ADDRESSES_FINALIZER, so however it is
// deleted it stays, terminating, with its status, until the fulfiller has
// freed its addresses and removed the finalizer. The node's record
// (node-record.ts) remembers when its grace ends and what its pods showed,
// tied to that NNC's uid: another NNC of the name is another quarantine.
// Pure: the finalizer, the grace's end and where a quarantine stands.
import type { NodeNetworkConfig } from '../nnc/types.ts';
import type { Quarantine, RecordView } from './node-record.ts';

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

/**
 * Where the record's quarantine stands: not recorded yet (for its NNC as it
 * is now), holding, or over (its grace has passed, or no pod is left).
 */
export function quarantineState(record: RecordView, now: number): 'unrecorded' | 'held' | 'over' {
  const q = record.quarantine;
  const uid = record.nnc()?.metadata.uid ?? '';
  if (!q || q.nncUid !== uid) return 'unrecorded';
  return q.podsGone || now >= q.until ? 'over' : 'held';
}

/** The quarantine a terminating NNC of a gone Node starts. */
export function quarantineOf(nnc: NodeNetworkConfig, graceMs: number, now: number): Quarantine {
  return {
    nncUid: nnc.metadata.uid ?? '',
    until: quarantineEnd(nnc, graceMs, now),
    lookFailures: 0,
  };
}
