// A deleted Node's addresses are quarantined (README "High availability"). `kubectl
// delete node` (or a cloud controller) removes the Node object while its
// machine may still run its pods: the pod GC deletes pods bound to a missing
// node only after 40 s, their kubelet stops them after that, and a kubelet
// that is still alive re-registers its Node. So the addresses the node's NNC
// held are kept (not handed out) for a grace period after the Node is seen
// deleted, and given back as they were if the Node re-registers meanwhile.
// The records live in the cluster, on the status of the ClusterSubnetState
// (`status.quarantine`), so a restarted or newly elected fulfiller keeps
// them: it reads them with its fresh lists before its first allocation.
// Pure: parsing, validation and the book of records; the fulfiller writes.
import type { NetworkContainer } from '../nnc/types.ts';
import { addressesOf } from './ledger.ts';

/** What is kept for one deleted Node. */
export interface QuarantineRecord {
  node: string;
  /** When the addresses may be freed (ms since the epoch). */
  until: number;
  /** The node's dynamic containers as its NNC last held them. */
  containers: NetworkContainer[];
}

/** `status.quarantine[]` as written on the ClusterSubnetState. */
export interface QuarantineEntry {
  node: string;
  until: string;
  containers: NetworkContainer[];
}

/** Parses the records of a CSS status; malformed entries are skipped and named. */
export function parseQuarantine(raw: unknown): { records: QuarantineRecord[]; skipped: string[] } {
  const records: QuarantineRecord[] = [];
  const skipped: string[] = [];
  if (raw === undefined || raw === null) return { records, skipped };
  if (!Array.isArray(raw)) return { records, skipped: ['status.quarantine is not a list'] };
  for (const [i, e] of raw.entries()) {
    const entry = e as Partial<QuarantineEntry> | null;
    const until = typeof entry?.until === 'string' ? Date.parse(entry.until) : NaN;
    if (
      typeof entry?.node !== 'string' ||
      entry.node === '' ||
      !Number.isFinite(until) ||
      !Array.isArray(entry.containers)
    ) {
      skipped.push(`status.quarantine[${i}]`);
      continue;
    }
    records.push({ node: entry.node, until, containers: entry.containers });
  }
  return { records, skipped };
}

export function quarantineEntries(records: Iterable<QuarantineRecord>): QuarantineEntry[] {
  return [...records]
    .sort((a, b) => a.node.localeCompare(b.node))
    .map((r) => ({
      node: r.node,
      until: new Date(r.until).toISOString(),
      containers: r.containers,
    }));
}

/** The records this fulfiller knows, by node name. */
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
