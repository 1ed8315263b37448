// The node records and the indexes derived from them (docs/decisions/0036):
// where they are kept, how they are read, and `refresh`, which every change
// of a record ends in: it recomputes what the record holds and updates the
// address index and the other indexes from it, so they never drift from
// the records. Records are keyed by their Node's uid; an NNC belongs to the
// record of the Node its ownerReference names (one without, to its name's
// current Node). The book (node-book.ts) is built on it: the term's memory
// (term-memory.ts) and what the watches and answers show.
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { AddressIndex, addressesOf, UNANSWERED_WRITE_MS } from './address-index.ts';
import type { RecordView } from './node-record.ts';
import { NodeRecord } from './node-record.ts';
import { Versions } from './versions.ts';

/** What the book tells the parts built after it (they subscribe; it calls nothing of theirs). */
export interface BookListener {
  /** Something about the name changed: its lifecycle may have work. */
  changed?(name: string): void;
  /** An NNC moved or went (a term's fence may open). */
  nncMoved?(): void;
}

/** How long an empty record stays, so that a late answer about a deleted uid is known stale. */
export const TOMBSTONE_MS = 2 * UNANSWERED_WRITE_MS;

export type Kind = 'node' | 'nnc';

export interface Named {
  metadata?: { name?: string; uid?: string; resourceVersion?: string };
}

/** The uid of the Node an NNC's ownerReferences name, if any. */
export function ownerUid(nnc: NodeNetworkConfig): string | undefined {
  const refs: unknown = nnc.metadata?.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  for (const r of refs as Array<{ kind?: unknown; uid?: unknown }>)
    if (r?.kind === 'Node' && typeof r.uid === 'string' && r.uid !== '') return r.uid;
  return undefined;
}

export class RecordStore {
  readonly addresses = new AddressIndex();
  protected readonly records = new Map<string, NodeRecord>();
  /** Derived: a name's records, oldest first. */
  protected readonly byName = new Map<string, NodeRecord[]>();
  /** Derived: records whose NNC the term's fence holds open, with addresses withheld, waiting. */
  protected readonly fenced = new Set<NodeRecord>();
  private readonly withholders = new Set<NodeRecord>();
  private readonly waiters = new Set<NodeRecord>();
  /** Derived: records that know an NNC (the count the gauges and logs give). */
  private readonly withNnc = new Set<NodeRecord>();
  protected readonly listeners: BookListener[] = [];
  protected readonly now: () => number;
  nodesListed = false;
  nncsListed = false;

  constructor(now: () => number) {
    this.now = now;
  }

  listen(listener: BookListener): void {
    this.listeners.push(listener);
  }

  /** The name's records that know or hold anything, oldest first. */
  recordsOf(name: string): RecordView[] {
    return (this.byName.get(name) ?? []).filter((r) => !r.isEmpty);
  }

  /** The record of the name's live Node (the newest, should the watch lag), if any. */
  liveRecord(name: string): RecordView | undefined {
    const list = this.byName.get(name) ?? [];
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.nodeInfo()) return list[i];
    return undefined;
  }

  /** The name's NNC as the newest record that knows one has it. */
  nnc(name: string): NodeNetworkConfig | undefined {
    const list = this.byName.get(name) ?? [];
    for (let i = list.length - 1; i >= 0; i--) {
      const nnc = list[i]!.nnc();
      if (nnc) return nnc;
    }
    return undefined;
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  record(key: string): RecordView | undefined {
    return this.records.get(key);
  }

  /** Every record (for the gauges). */
  all(): RecordView[] {
    return [...this.records.values()];
  }

  get nncCount(): number {
    return this.withNnc.size;
  }

  get nodeCount(): number {
    let n = 0;
    for (const r of this.records.values()) if (r.nodeInfo()) n++;
    return n;
  }

  /** Whether a record other than `own` holds `ip`: an NNC state, a kept address, a pick, a doubt. */
  heldByOthers(own: RecordView | undefined, ip: string): boolean {
    const mine = own && (own as NodeRecord).holding.has(ip) ? 1 : 0;
    return this.addresses.holdersOf(ip) > mine;
  }

  /** Addresses two records' newest NNC statuses both hold: a conflict to report (stays 0). */
  conflicts(): number {
    const seen = new Map<string, number>();
    for (const r of this.records.values()) {
      const nnc = r.nnc();
      if (!nnc) continue;
      for (const ip of addressesOf(dynamicContainers(nnc))) seen.set(ip, (seen.get(ip) ?? 0) + 1);
    }
    let n = 0;
    for (const count of seen.values()) if (count > 1) n++;
    return n;
  }

  /**
   * Names whose NNC more than one state may be (an answer the stream has
   * not reached, versions.ts): a read sent now settles them. The stream
   * reaches every answer but one it skipped with a re-list; the resync reads
   * those (leader-term.ts).
   */
  ambiguous(): string[] {
    const out = new Set<string>();
    for (const r of this.records.values()) if (r.nncs.all().length > 1) out.add(r.name);
    return [...out];
  }

  withholding(): RecordView[] {
    return [...this.withholders];
  }

  waiting(): RecordView[] {
    return [...this.waiters];
  }

  /** Drops records that have known and held nothing for a while (their tombstones served). */
  sweep(): void {
    const now = this.now();
    for (const r of [...this.records.values()])
      if (r.isEmpty && r.emptySince !== undefined && now - r.emptySince >= TOMBSTONE_MS)
        this.drop(r);
  }

  protected own(view: RecordView): NodeRecord {
    const r = this.records.get(view.key);
    if (r !== view) throw new Error(`record ${view.key} is not this book's`);
    return r;
  }

  protected versionsOf(kind: Kind, r: NodeRecord): Versions<Named> {
    return (kind === 'node' ? r.node : r.nncs) as Versions<Named>;
  }

  /** The record an object belongs to, made when new. */
  protected recordFor(kind: Kind, object: Named, name: string): NodeRecord {
    let key: string;
    if (kind === 'node') key = object.metadata?.uid || `~${name}`;
    else {
      const uid = object.metadata?.uid ?? '';
      const holder = (this.byName.get(name) ?? []).find((r) => r.nncs.uids().has(uid));
      key =
        ownerUid(object as NodeNetworkConfig) ??
        holder?.key ??
        this.liveRecord(name)?.key ??
        `~${name}`;
    }
    let r = this.records.get(key);
    if (r) return r;
    r = new NodeRecord(key, name);
    this.records.set(key, r);
    this.byName.set(name, [...(this.byName.get(name) ?? []), r]);
    // A Node seen after an NNC of its name that names no owner: the NNC is this Node's.
    const placeholder = this.records.get(`~${name}`);
    if (kind === 'node' && placeholder && placeholder !== r && placeholder.node.empty) {
      r.nncs = placeholder.nncs;
      placeholder.nncs = new Versions<NodeNetworkConfig>();
      this.refresh(placeholder);
    }
    return r;
  }

  /** Recomputes what the record holds, and the indexes, from it. */
  protected refresh(r: NodeRecord): void {
    const holds = r.holdings();
    this.addresses.update(r.holding, holds);
    r.holding = holds;
    if (r.withheld) this.withholders.add(r);
    else this.withholders.delete(r);
    if (r.waits) this.waiters.add(r);
    else this.waiters.delete(r);
    if (r.nnc()) this.withNnc.add(r);
    else this.withNnc.delete(r);
    if (r.isEmpty) r.emptySince ??= this.now();
    else r.emptySince = undefined;
  }

  protected drop(r: NodeRecord): void {
    this.records.delete(r.key);
    const list = (this.byName.get(r.name) ?? []).filter((o) => o !== r);
    if (list.length > 0) this.byName.set(r.name, list);
    else this.byName.delete(r.name);
    this.fenced.delete(r);
    this.withholders.delete(r);
    this.waiters.delete(r);
    this.withNnc.delete(r);
  }
}
