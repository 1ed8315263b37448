// The term's memory of the nodes (docs/decisions/0036): addresses kept
// without a status, a round's picks, writes in doubt, quarantines, verdicts,
// waits, and the fence of the previous term's writes (docs/decisions/0022).
// It starts empty at each term's fresh lists (`beginTerm`) and goes with
// the term (`endTerm`): a replica that does not lead keeps only what the
// cluster shows. Every change goes through the record store's `refresh`.
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { UNANSWERED_WRITE_MS } from './address-index.ts';
import type { Kept, Quarantine, RecordView, Verdicts } from './node-record.ts';
import type { NodeRecord } from './node-record.ts';
import { RecordStore } from './record-store.ts';

export class TermMemory extends RecordStore {
  /** Set while this replica leads: memory is kept; a memory-only quarantine's grace; the fence's end. */
  protected term: { graceMs: number; fenceUntil: number } | undefined;

  /** Why no new address may go to `target` now: another NNC's fence is open (docs/decisions/0022). */
  fenceWait(target: RecordView | undefined): string | undefined {
    const term = this.term;
    if (!term || this.fenceOver()) return undefined;
    const now = this.now();
    // Cheap on every round: a count, and the first few names.
    const open = this.fenced.size - (this.fenced.has(target as NodeRecord) ? 1 : 0);
    if (open === 0) return undefined;
    const shown: string[] = [];
    for (const r of this.fenced) {
      if (r !== target) shown.push(r.name);
      if (shown.length === 3) break;
    }
    return `${open} NodeNetworkConfig(s) (${shown.join(', ')}${open > 3 ? ', ...' : ''}) may still receive a status write the previous leader sent; new addresses wait until each is read at another version or ${Math.ceil((term.fenceUntil - now) / 1000)} s have passed`;
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

  /** Whether the fence still holds the name's NNC open (its mark is still owed). */
  isFenced(name: string): boolean {
    if (this.fenceOver()) return false;
    return (this.byName.get(name) ?? []).some((r) => this.fenced.has(r));
  }

  /** Every NNC the fence still holds open (the term's mark goes to each). */
  fencedNames(): string[] {
    return this.fenceOver() ? [] : [...this.fenced].map((r) => r.name);
  }

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

  protected closeFence(r: NodeRecord): void {
    if (r.fence) r.nncs.untrack(r.fence);
    r.fence = undefined;
    this.fenced.delete(r);
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
