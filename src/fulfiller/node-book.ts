// The node book (docs/decisions/0036): the node records (record-store.ts)
// with the term's memory (term-memory.ts), and what the watches and the
// fulfiller's answers show, taken in as versions.ts orders it: never by
// comparing resourceVersions. The only code that changes a record.
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { addressesOf } from './address-index.ts';
import type { NodeRecord } from './node-record.ts';
import type { Kind, Named } from './record-store.ts';
import { TermMemory } from './term-memory.ts';

export { nextSeq } from './versions.ts';
export { ownerUid, TOMBSTONE_MS } from './record-store.ts';
export type { BookListener, Kind, Named } from './record-store.ts';

/** What a record knew before a change: its NNC, and what its Node's restore annotation named. */
interface Before {
  nnc: NodeNetworkConfig | undefined;
  nodeRestore: NetworkContainer[] | undefined;
}

function before(r: NodeRecord): Before {
  return { nnc: r.nnc(), nodeRestore: r.nodeRestore() };
}

function nameOf(o: Named | undefined): string | undefined {
  const name = o?.metadata?.name;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

export class NodeBook extends TermMemory {
  /** A watch event: an add or update, or (`deleted`) a deletion. */
  streamed(kind: Kind, object: Named, deleted = false): void {
    const name = nameOf(object);
    if (!name) return;
    const uid = object.metadata?.uid ?? '';
    if (deleted) {
      for (const r of this.byName.get(name) ?? []) {
        const last = before(r);
        if (this.versionsOf(kind, r).deleted(uid)) this.settled(kind, r, last);
      }
      return;
    }
    const record = this.recordFor(kind, object, name);
    const last = before(record);
    if (!this.versionsOf(kind, record).observe(object as never, { from: 'stream' })) return;
    // The stream is ordered: what it showed of the name before, under another uid, is gone.
    for (const r of this.byName.get(name) ?? []) {
      if (r === record) continue;
      const was = before(r);
      if (this.versionsOf(kind, r).streamMovedOn(uid)) this.settled(kind, r, was);
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
    let last: Before | undefined;
    let told = false;
    if (object) {
      record = this.recordFor(kind, object, name);
      last = before(record);
      const versions = this.versionsOf(kind, record);
      told = inStream
        ? versions.relisted(object as never, sent)
        : versions.observe(object as never, { from: 'read', sent });
    }
    for (const r of [...(this.byName.get(name) ?? [])]) {
      if (r === record) continue;
      const was = before(r);
      let changed = this.versionsOf(kind, r).supersede(sent, uid);
      // A record made before the request, of a Node the answer does not show,
      // is of a Node deleted before it (an ownerReference names a Node that
      // existed; a uid never comes back).
      const nodeUid = r.key.startsWith('~') ? '' : r.key;
      const shown = object ? (uid ?? '') : undefined;
      if (kind === 'node' && r.since < sent && !r.nodeGone() && nodeUid !== shown)
        changed = r.node.deleted(nodeUid) || true;
      if (changed) this.settled(kind, r, was);
    }
    if (record && told) this.settled(kind, record, last!);
  }

  /** The object of `uid` is gone, as an answer said (a patch that removed a terminating NNC's last finalizer). */
  gone(kind: Kind, name: string, uid: string): void {
    for (const r of this.byName.get(name) ?? []) {
      const last = before(r);
      if (this.versionsOf(kind, r).deleted(uid)) this.settled(kind, r, last);
    }
  }

  /** After what a record knows changed (`last`: what it knew before): settle what that decides. */
  private settled(kind: Kind, r: NodeRecord, last: Before): void {
    if (kind === 'node' && last.nodeRestore && !r.node.latest())
      this.keepNodeRestore(r, last.nodeRestore);
    if (kind === 'nnc') {
      // Writes in doubt the NNC moved past are decided: landed (the status shows it) or never.
      r.doubts = r.doubts.filter((d) => {
        if (d.point.moved) r.nncs.untrack(d.point);
        return !d.point.moved;
      });
      if (r.fence?.moved) this.closeFence(r);
      if (last.nnc && r.nncs.empty) this.keepOnDeletion(r, last.nnc);
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
   * The record's Node is gone while its restore annotation named addresses
   * (an NNC let go under it, its successor not made yet): this term's
   * memory keeps them, and the lifecycle quarantines them.
   */
  private keepNodeRestore(r: NodeRecord, containers: NetworkContainer[]): void {
    if (!this.term || r.kept || addressesOf(containers).size === 0) return;
    r.kept = { containers: structuredClone(containers), why: 'replaced' };
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
}
