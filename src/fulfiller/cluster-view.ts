// The fulfiller's view of the cluster (docs/design/fulfiller.md#shape): NNCs
// and Nodes as their watches, re-lists and a new term's fresh lists deliver
// them, each name's newest version only (an older event is ignored, whichever
// path it came by). NNCs go into the address ledger, Nodes into a cache. It
// says only "this name changed"; what to do about it is the reconciler's.
// Every replica keeps it, so a standby is warm.
import type { Logger } from '../log/logger.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { newestVersion, vanished } from './fresh-lists.ts';
import type { AddressLedger } from './ledger.ts';
import { isNewer, rvNumber } from './ledger.ts';
import type { NodeInfo, NodeObject } from './nodes.ts';
import { nodeInfo } from './nodes.ts';
import { restoreRecord } from './quarantine.ts';
import { jsonEqual, statusHolds } from './status.ts';

export interface ViewHooks {
  /** Something about this name changed: its lifecycle may have work. */
  changed(name: string): void;
  /** An NNC moved to a newer version (the previous term's fence may open). */
  nncMoved(): void;
  /** Whether a deleted NNC's addresses stay in use (its Node lives, its quarantine holds). */
  keepsOnDeletion(name: string): boolean;
  /** An NNC's deletion was taken in: what was reported about it is forgotten. */
  nncGone(name: string): void;
  /** Addresses were taken, or (`freed`) came free. */
  subnetsChanged(freed: boolean): void;
}

export class ClusterView {
  private readonly ledger: AddressLedger;
  private readonly log: Logger;
  private readonly hooks: ViewHooks;
  private readonly nodes = new Map<string, NodeInfo>();
  /** Newest Node resourceVersion read per name, deletions included. */
  private readonly nodeVersions = new Map<string, bigint>();
  private nncsListed = false;
  private nodesListed = false;
  /** Set by stop(): nothing is taken in any more. */
  private closed = false;

  constructor(ledger: AddressLedger, log: Logger, hooks: ViewHooks) {
    this.ledger = ledger;
    this.log = log;
    this.hooks = hooks;
  }

  /** Both watches have listed: the picture is complete. */
  get ready(): boolean {
    return this.nncsListed && this.nodesListed;
  }

  /** The Node watch has listed once (a Node absent from the cache is then really gone). */
  get nodesKnown(): boolean {
    return this.nodesListed;
  }

  node(name: string): NodeInfo | undefined {
    return this.nodes.get(name);
  }

  hasNode(name: string): boolean {
    return this.nodes.has(name);
  }

  get nodeCount(): number {
    return this.nodes.size;
  }

  /** Every name the lifecycle may concern: NNCs, Nodes and retained addresses. */
  names(): Set<string> {
    const names = new Set<string>(this.ledger.names());
    for (const name of this.nodes.keys()) names.add(name);
    for (const name of this.ledger.retainedNames()) names.add(name);
    return names;
  }

  close(): void {
    this.closed = true;
  }

  /** An NNC added or changed (watch, re-list, or a write's answer). */
  upsertNnc(nnc: NodeNetworkConfig): void {
    const name = nnc?.metadata?.name;
    if (this.closed || !name) return;
    const previous = this.ledger.nnc(name);
    const uid = nnc.metadata.uid;
    const newer = isNewer(
      rvNumber(nnc.metadata.resourceVersion),
      rvNumber(previous?.metadata.resourceVersion),
    );
    if (previous && uid && previous.metadata.uid && previous.metadata.uid !== uid && newer) {
      // Deleted and recreated while the watch was away: the deletion first.
      this.ledger.deleted(previous, this.hooks.keepsOnDeletion(name));
    }
    if (this.ledger.observe(nnc)) {
      this.keepRestoreRecord(nnc);
      this.hooks.changed(name);
      this.hooks.nncMoved();
    }
  }

  /**
   * A successor NNC's restore annotation (quarantine.ts) keeps the addresses
   * it names in use until its status holds them, whichever leader created it.
   */
  private keepRestoreRecord(nnc: NodeNetworkConfig): void {
    const containers = restoreRecord(nnc);
    const name = nnc.metadata.name;
    if (!containers || this.ledger.retained(name) || statusHolds(nnc.status, containers)) return;
    this.ledger.retain(name, containers);
  }

  /**
   * An NNC deleted: its addresses stay in use while its Node lives, and
   * while its quarantine is not over (an NNC that left without the
   * addresses finalizer, or with it removed by hand).
   */
  removeNnc(nnc: NodeNetworkConfig): void {
    const name = nnc?.metadata?.name;
    if (this.closed || !name) return;
    const kept = this.hooks.keepsOnDeletion(name);
    if (!this.ledger.deleted(nnc, kept)) return;
    this.hooks.nncGone(name);
    this.log.info(kept ? 'node network config deleted under a live node' : 'node removed', {
      node: name,
    });
    this.hooks.changed(name);
    this.hooks.subnetsChanged(!kept);
    this.hooks.nncMoved();
  }

  /** The NNC watch completed a full list, current at `listRv` (else its newest item's version). */
  nncsSynced(all: NodeNetworkConfig[], listRv?: string): void {
    if (this.closed) return;
    // An NNC known only from a write's answer that a re-list no longer holds
    // was deleted (the watch never showed it, so no deletion comes): absent,
    // and older than the newest version listed, it is gone (found by the
    // interleaving explorer).
    this.loadNncs(all, listRv ?? newestVersion(all));
    this.nncsListed = true;
  }

  /** A Node added or changed (an older version than already read is ignored). */
  upsertNode(node: NodeObject): void {
    const info = nodeInfo(node);
    if (this.closed || !info || !this.newerNode(info.name, node)) return;
    const before = this.nodes.get(info.name);
    this.nodes.set(info.name, info);
    if (!before || !jsonEqual(before, info)) this.hooks.changed(info.name);
  }

  /** A Node deleted: its NNC goes, and its addresses are freed (or quarantined). */
  removeNode(node: NodeObject): void {
    const name = node?.metadata?.name;
    // A re-list reports a deletion with the last version it had cached: the same one counts.
    if (this.closed || !name || !this.newerNode(name, node, true)) return;
    if (!this.nodes.delete(name)) return;
    this.log.info('node deleted', { node: name });
    this.hooks.changed(name);
  }

  /** The Node watch completed a full list (current at `listRv`, as for nncsSynced). */
  nodesSynced(all: NodeObject[], listRv?: string): void {
    if (this.closed) return;
    // Likewise a Node known only from a term's fresh list (the watch was
    // down when it came and went): absent from the re-list, it is gone.
    this.loadNodes(all, listRv ?? newestVersion(all));
    this.nodesListed = true;
  }

  /** A list of Nodes: every one taken in, every known one it proves deleted removed. */
  loadNodes(items: NodeObject[], listRv: string | undefined): void {
    for (const node of items) this.upsertNode(node);
    const listed = new Set<string>(items.map((n) => n?.metadata?.name ?? ''));
    const known = [...this.nodes.keys()].map((n): [string, bigint | undefined] => [
      n,
      this.nodeVersions.get(n),
    ]);
    for (const name of vanished(known, listed, listRv))
      this.removeNode({ metadata: { name, resourceVersion: listRv } } as NodeObject);
  }

  /** A list of NNCs, likewise. */
  loadNncs(items: NodeNetworkConfig[], listRv: string | undefined): void {
    for (const nnc of items) this.upsertNnc(nnc);
    const listed = new Set<string>(items.map((n) => n?.metadata?.name ?? ''));
    const known = [...this.ledger.names()].map((n): [string, bigint | undefined] => [
      n,
      rvNumber(this.ledger.nnc(n)?.metadata.resourceVersion),
    ]);
    for (const name of vanished(known, listed, listRv)) {
      const last = this.ledger.nnc(name)!;
      this.removeNnc({ ...last, metadata: { ...last.metadata, resourceVersion: listRv } });
    }
  }

  private newerNode(name: string, node: NodeObject, orSame = false): boolean {
    const rv = rvNumber(node.metadata?.resourceVersion);
    const seen = this.nodeVersions.get(name);
    if (!isNewer(rv, seen) && !(orSame && rv === seen)) return false;
    if (rv !== undefined) this.nodeVersions.set(name, rv);
    return true;
  }
}
