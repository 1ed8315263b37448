// Every node record and the indexes derived from them (docs/decisions/0036).
// The only code that changes a record: each change ends in `refresh`, which
// recomputes what the record holds and updates the address index and the
// other indexes from it, so they never drift from the records. Records are
// keyed by their Node's uid; an NNC belongs to the record of the Node its
// ownerReference names (one without, to its name's current Node). What
// arrives is ordered as versions.ts says, never by comparing
// resourceVersions. The term's memory (addresses kept for a deleted NNC, a
// round's picks, writes in doubt, quarantines, the fence) starts empty at
// each term's fresh lists and goes with the term: a replica that does not
// lead keeps only what the cluster shows.
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { AddressIndex, addressesOf, UNANSWERED_WRITE_MS } from './address-index.ts';
import type { Kept, Quarantine, RecordView, Verdicts } from './node-record.ts';
import { NodeRecord } from './node-record.ts';
import type { NodeObject } from './nodes.ts';
import { Versions } from './versions.ts';

export { nextSeq } from './versions.ts';

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

function nameOf(o: Named | undefined): string | undefined {
  const name = o?.metadata?.name;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** The uid of the Node an NNC's ownerReferences name, if any. */
export function ownerUid(nnc: NodeNetworkConfig): string | undefined {
  const refs: unknown = nnc.metadata?.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  for (const r of refs as Array<{ kind?: unknown; uid?: unknown }>)
    if (r?.kind === 'Node' && typeof r.uid === 'string' && r.uid !== '') return r.uid;
  return undefined;
}

export class NodeBook {
  readonly addresses = new AddressIndex();
  private readonly records = new Map<string, NodeRecord>();
  /** Derived: a name's records, oldest first. */
  private readonly byName = new Map<string, NodeRecord[]>();
  /** Derived: records whose NNC the term's fence holds open, with addresses withheld, waiting. */
  private readonly fenced = new Set<NodeRecord>();
  private readonly withholders = new Set<NodeRecord>();
  private readonly waiters = new Set<NodeRecord>();
  private readonly listeners: BookListener[] = [];
  private readonly now: () => number;
  /** Set while this replica leads: memory is kept; a memory-only quarantine's grace; the fence's end. */
  private term: { graceMs: number; fenceUntil: number } | undefined;
  nodesListed = false;
  nncsListed = false;

  constructor(now: () => number) {
    this.now = now;
  }

  listen(listener: BookListener): void {
    this.listeners.push(listener);
  }

  // ---- reads -------------------------------------------------------------

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
    let n = 0;
    for (const r of this.records.values()) if (r.nnc()) n++;
    return n;
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

  /** Why no new address may go to `target` now: another NNC's fence is open (docs/decisions/0022). */
  fenceWait(target: RecordView | undefined): string | undefined {
    const term = this.term;
    if (!term || this.fenceOver()) return undefined;
    const now = this.now();
    const open = [...this.fenced].filter((r) => r !== target);
    if (open.length === 0) return undefined;
    const shown = open.slice(0, 3).map((r) => r.name);
    return `${open.length} NodeNetworkConfig(s) (${shown.join(', ')}${open.length > 3 ? ', ...' : ''}) may still receive a status write the previous leader sent; new addresses wait until each is read at another version or ${Math.ceil((term.fenceUntil - now) / 1000)} s have passed`;
  }

  /** True once no NNC is fenced any more (each known past its listed version, or the time is over). */
  private fenceOver(): boolean {
    if (this.fenced.size === 0) return true;
    if (this.term && this.now() < this.term.fenceUntil) return false;
    for (const r of [...this.fenced]) this.closeFence(r);
    return true;
  }

  /** The fence holds at most one NNC open: nodes that waited for it may try again. */
  get fenceMostlyOpen(): boolean {
    return this.fenceOver() || this.fenced.size <= 1;
  }

  /** Every NNC the fence still holds open (the term's mark goes to each). */
  fencedNames(): string[] {
    return this.fenceOver() ? [] : [...this.fenced].map((r) => r.name);
  }

  // ---- what the watches and answers show ---------------------------------

  /** A watch event: an add or update, or (`deleted`) a deletion. */
  streamed(kind: Kind, object: Named, deleted = false): void {
    const name = nameOf(object);
    if (!name) return;
    const uid = object.metadata?.uid ?? '';
    if (deleted) {
      for (const r of this.byName.get(name) ?? []) {
        const last = r.nnc();
        if (this.versionsOf(kind, r).deleted(uid)) this.settled(kind, r, last);
      }
      return;
    }
    const record = this.recordFor(kind, object, name);
    const last = record.nnc();
    if (!this.versionsOf(kind, record).observe(object as never, { from: 'stream' })) return;
    // The stream is ordered: what it showed of the name before, under another uid, is gone.
    for (const r of this.byName.get(name) ?? []) {
      if (r === record) continue;
      const before = r.nnc();
      if (this.versionsOf(kind, r).streamMovedOn(uid)) this.settled(kind, r, before);
    }
    this.settled(kind, record, last);
  }

  /**
   * A list of every object of a kind, sent at `sent` (versions.ts' nextSeq):
   * the term's fresh list, or (`inStream`) a watch's re-list, which its
   * stream goes on from. A known name it lacks was deleted before it.
   */
  listed(kind: Kind, items: readonly Named[], sent: number, inStream: boolean): void {
    const listed = new Set<string>();
    for (const object of items) {
      const name = nameOf(object);
      if (!name) continue;
      listed.add(name);
      this.answered(kind, name, object, sent, inStream);
    }
    for (const name of this.names())
      if (!listed.has(name)) this.answered(kind, name, undefined, sent);
    if (kind === 'node') this.nodesListed = true;
    else this.nncsListed = true;
  }

  /**
   * An answer about one name to a request sent at `sent`: its object, or
   * undefined when the name holds none (a 404). Whatever was known of the
   * name before the request is older.
   */
  answered(
    kind: Kind,
    name: string,
    object: Named | undefined,
    sent: number,
    inStream = false,
  ): void {
    const uid = object?.metadata?.uid;
    let record: NodeRecord | undefined;
    let last: NodeNetworkConfig | undefined;
    let told = false;
    if (object) {
      record = this.recordFor(kind, object, name);
      last = record.nnc();
      const versions = this.versionsOf(kind, record);
      told = inStream
        ? versions.relisted(object as never, sent)
        : versions.observe(object as never, { from: 'read', sent });
    }
    for (const r of [...(this.byName.get(name) ?? [])]) {
      if (r === record) continue;
      const before = r.nnc();
      let changed = this.versionsOf(kind, r).supersede(sent, uid);
      // A record made before the request, of a Node the answer does not show,
      // is of a Node deleted before it (an ownerReference names a Node that
      // existed; a uid never comes back).
      const nodeUid = r.key.startsWith('~') ? '' : r.key;
      const shown = object ? (uid ?? '') : undefined;
      if (kind === 'node' && r.since < sent && !r.nodeGone() && nodeUid !== shown)
        changed = r.node.deleted(nodeUid) || true;
      if (changed) this.settled(kind, r, before);
    }
    if (record && told) this.settled(kind, record, last);
  }

  // ---- the fulfiller's memory --------------------------------------------

  /**
   * The term begins, its fresh lists loaded: memory is kept from now on, and
   * every NNC known is fenced for `fenceMs` (docs/decisions/0022).
   */
  beginTerm(graceMs: number, fenceMs: number): void {
    this.dropMemory();
    this.term = { graceMs, fenceUntil: this.now() + fenceMs };
    if (fenceMs <= 0) return;
    for (const r of this.records.values()) {
      const nnc = r.nnc();
      if (!nnc) continue;
      const point = r.nncs.track(
        nnc.metadata.uid ?? '',
        nnc.metadata.resourceVersion ?? '',
        r.nncSeen(),
      );
      if (point.moved) continue;
      r.fence = point;
      this.fenced.add(r);
    }
  }

  /** The term ended: its memory goes. */
  endTerm(): void {
    this.term = undefined;
    this.dropMemory();
  }

  get leading(): boolean {
    return this.term !== undefined;
  }

  /**
   * The record addresses the pods of a node name hold are kept by
   * (pod-rescue.ts): its live Node's, else its newest, else a new one.
   */
  recordForPods(name: string): RecordView {
    const list = this.byName.get(name) ?? [];
    return (
      this.liveRecord(name) ??
      list[list.length - 1] ??
      this.recordFor('nnc', { metadata: { name } }, name)
    );
  }

  /** Addresses kept for the node without a status, or (undefined) no more. */
  keep(view: RecordView, kept: Kept | undefined): void {
    const r = this.own(view);
    if (kept && !this.term) return; // memory is the term's
    r.kept = kept ? { ...kept, containers: structuredClone(kept.containers) } : undefined;
    this.refresh(r);
    // What is kept decides the name's lifecycle (create, restore, quarantine, forget).
    for (const l of this.listeners) l.changed?.(r.name);
  }

  /**
   * The NNC of `from` is let go on purpose (`to` undefined: its quarantine
   * is over and its addresses are freed), or its addresses go to `to`, the
   * record of a Node that came back under the name, kept for its NNC's
   * successor. Said before the write that lets it go, so that its deletion
   * keeps nothing for `from`.
   */
  letGo(from: RecordView, to?: RecordView, containers: NetworkContainer[] = []): void {
    const r = this.own(from);
    if (!this.term) return;
    r.letGo = r.nnc()?.metadata.uid;
    if (to && containers.length > 0) {
      const t = this.own(to);
      const ids = new Set(containers.map((nc) => nc.id));
      const merged = [
        ...(t.kept?.containers ?? []).filter((nc) => !ids.has(nc.id)),
        ...structuredClone(containers),
      ];
      t.kept = { containers: merged, why: 'replaced' };
      this.refresh(t);
    }
    this.refresh(r);
    for (const l of this.listeners) l.changed?.(r.name);
  }

  /** A round picks these addresses for the node: held until its status write is answered. */
  reserve(view: RecordView, ips: readonly string[]): void {
    const r = this.own(view);
    if (ips.length === 0) return;
    for (const ip of ips) r.reserved.add(ip);
    this.refresh(r);
  }

  /** The round's picks: in its status now (the answer shows them), or in no status. */
  unreserve(view: RecordView, ips: readonly string[]): void {
    const r = this.own(view);
    let changed = false;
    for (const ip of ips) changed = r.reserved.delete(ip) || changed;
    if (changed) this.refresh(r);
  }

  /**
   * A status write based on `base` (received at `baseSeen`) failed without
   * saying whether it landed: what it added stays held until the NNC is
   * known past `base`.
   */
  doubt(
    view: RecordView,
    base: NodeNetworkConfig,
    baseSeen: number,
    ips: readonly string[],
    code?: number,
  ): void {
    const r = this.own(view);
    for (const ip of ips) r.reserved.delete(ip);
    const point = r.nncs.track(
      base.metadata.uid ?? '',
      base.metadata.resourceVersion ?? '',
      baseSeen,
    );
    if (ips.length > 0 && !point.moved)
      r.doubts.push({
        point,
        ips: [...ips],
        at: this.now(),
        ...(code !== undefined ? { code } : {}),
      });
    else r.nncs.untrack(point);
    this.refresh(r);
  }

  /**
   * The NNC was read, by a request sent at `sentAt` (ms), at the very version
   * a doubtful write was based on: once the request timeout had passed since
   * the write failed, it never lands. True when that freed any address.
   */
  settleUnanswered(view: RecordView, rv: string | undefined, sentAt: number): boolean {
    const r = this.own(view);
    const before = r.doubts.length;
    r.doubts = r.doubts.filter((d) => {
      const over = d.point.rv === rv && sentAt - d.at >= UNANSWERED_WRITE_MS;
      if (over) r.nncs.untrack(d.point);
      return !over;
    });
    if (r.doubts.length === before) return false;
    this.refresh(r);
    return true;
  }

  quarantine(view: RecordView, q: Quarantine | undefined): void {
    const r = this.own(view);
    if (q && !this.term) return;
    r.quarantine = q;
  }

  verdict(view: RecordView, change: Partial<Verdicts>): void {
    const v = this.own(view).verdicts;
    for (const k of Object.keys(change) as Array<keyof Verdicts>) {
      if (change[k] === undefined) delete v[k];
      else v[k] = change[k];
    }
  }

  withhold(view: RecordView, ips: string[] | undefined): void {
    const r = this.own(view);
    r.withheld = ips && ips.length > 0 ? ips : undefined;
    this.refresh(r);
  }

  /** Why the node's run waits (a view that may miss changes, the fence), or undefined. */
  wait(view: RecordView, reason: string | undefined): void {
    const r = this.own(view);
    r.waits = this.term ? reason : undefined;
    this.refresh(r);
  }

  /** The object of `uid` is gone, as an answer said (a patch that removed a terminating NNC's last finalizer). */
  gone(kind: Kind, name: string, uid: string): void {
    for (const r of this.byName.get(name) ?? []) {
      const last = r.nnc();
      if (this.versionsOf(kind, r).deleted(uid)) this.settled(kind, r, last);
    }
  }

  /** Drops records that have known and held nothing for a while (their tombstones served). */
  sweep(): void {
    const now = this.now();
    for (const r of [...this.records.values()])
      if (r.isEmpty && r.emptySince !== undefined && now - r.emptySince >= TOMBSTONE_MS)
        this.drop(r);
  }

  // ---- internals -----------------------------------------------------------

  private own(view: RecordView): NodeRecord {
    const r = this.records.get(view.key);
    if (r !== view) throw new Error(`record ${view.key} is not this book's`);
    return r;
  }

  private versionsOf(kind: Kind, r: NodeRecord): Versions<Named> {
    return (kind === 'node' ? r.node : r.nncs) as Versions<Named>;
  }

  /** The record an object belongs to, made when new. */
  private recordFor(kind: Kind, object: Named, name: string): NodeRecord {
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

  /** After what a record knows changed (`last`: its NNC before): settle what that decides. */
  private settled(kind: Kind, r: NodeRecord, last: NodeNetworkConfig | undefined): void {
    if (kind === 'nnc') {
      // Writes in doubt the NNC moved past are decided: landed (the status shows it) or never.
      r.doubts = r.doubts.filter((d) => {
        if (d.point.moved) r.nncs.untrack(d.point);
        return !d.point.moved;
      });
      if (r.fence?.moved) this.closeFence(r);
      if (last && r.nncs.empty) this.keepOnDeletion(r, last);
      const q = r.quarantine;
      if (q && q.nncUid !== '' && r.nnc()?.metadata.uid !== q.nncUid) r.quarantine = undefined;
    }
    this.refresh(r);
    for (const l of this.listeners) {
      if (kind === 'nnc') l.nncMoved?.();
      l.changed?.(r.name);
    }
  }

  /**
   * The record's NNC is gone (`last` its final state). Its addresses stay
   * held by this term's memory unless it was let go on purpose: for the
   * successor while its Node lives (it left without the addresses
   * finalizer, or its finalizer came off by hand), for a grace while the
   * Node is gone, unless its quarantine is over (docs/design/fulfiller.md#quarantine).
   */
  private keepOnDeletion(r: NodeRecord, last: NodeNetworkConfig): void {
    const term = this.term;
    if (!term || r.kept || r.letGo === last.metadata.uid) return;
    const containers = dynamicContainers(last);
    if (addressesOf(containers).size === 0) return;
    if (r.nodeInfo()) {
      r.kept = { containers: structuredClone(containers), why: 'replaced' };
      return;
    }
    const q = r.quarantine;
    const now = this.now();
    if (q && (q.podsGone || now >= q.until)) return; // released: its addresses are free
    r.kept = { containers: structuredClone(containers), why: 'quarantine' };
    r.quarantine = { nncUid: '', until: q?.until ?? now + term.graceMs, lookFailures: 0 };
  }

  private closeFence(r: NodeRecord): void {
    if (r.fence) r.nncs.untrack(r.fence);
    r.fence = undefined;
    this.fenced.delete(r);
  }

  /** Recomputes what the record holds, and the indexes, from it. */
  private refresh(r: NodeRecord): void {
    const holds = r.holdings();
    this.addresses.update(r.holding, holds);
    r.holding = holds;
    if (r.withheld) this.withholders.add(r);
    else this.withholders.delete(r);
    if (r.waits) this.waiters.add(r);
    else this.waiters.delete(r);
    if (r.isEmpty) r.emptySince ??= this.now();
    else r.emptySince = undefined;
  }

  private drop(r: NodeRecord): void {
    this.records.delete(r.key);
    const list = (this.byName.get(r.name) ?? []).filter((o) => o !== r);
    if (list.length > 0) this.byName.set(r.name, list);
    else this.byName.delete(r.name);
    this.fenced.delete(r);
    this.withholders.delete(r);
    this.waiters.delete(r);
  }

  private dropMemory(): void {
    for (const r of this.records.values()) {
      r.kept = undefined;
      r.reserved.clear();
      for (const d of r.doubts) r.nncs.untrack(d.point);
      r.doubts = [];
      r.quarantine = undefined;
      r.waits = undefined;
      r.letGo = undefined;
      if (r.fence) r.nncs.untrack(r.fence);
      r.fence = undefined;
      this.refresh(r);
    }
    this.fenced.clear();
  }
}

export type { NodeObject };
