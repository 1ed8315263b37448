// Everything the fulfiller knows of one node (docs/decisions/0036), as
// Cilium's operator keeps one `Node` per node: one record per Node
// incarnation, keyed by the Node's uid, so nothing known of an earlier Node
// of the same name can act on a new one. It holds what the watches and
// answers showed of the Node and of the NNCs it owns (versions.ts), and the
// fulfiller's own memory of the node: addresses kept without a status, a
// round's picks, writes in doubt, the quarantine, the term's fence and what
// was said about it. The addresses it holds are derived from all of that;
// the address index (address-index.ts) is derived from every record's. Only
// the book (node-book.ts) changes a record; a run reads it through
// `RecordView`.
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers, restoreRecord } from '../nnc/types.ts';
import { addressesOf } from './address-index.ts';
import type { NodeInfo, NodeObject } from './nodes.ts';
import { nodeInfo } from './nodes.ts';
import type { MovePoint } from './versions.ts';
import { nextSeq, Versions } from './versions.ts';

/** Addresses held for the node that no status of its holds (yet). */
export interface Kept {
  containers: NetworkContainer[];
  /**
   * `replaced`: its NNC was let go under its live Node, for the successor
   * (this term's memory); `rescued`: running pods report them and no record
   * held them (pod-rescue.ts); `quarantine`: its Node is gone and so is its
   * NNC, which left without the addresses finalizer: kept for the rest of
   * the grace (`quarantine`, this term's memory; docs/design/fulfiller.md#quarantine).
   */
  why: 'replaced' | 'rescued' | 'quarantine';
}

/** A status write that failed without saying whether it landed. */
export interface Doubt {
  /** Settled once the NNC is known past the version the write was based on. */
  point: MovePoint;
  /** The addresses it added. */
  ips: string[];
  /** When it failed (ms on the fulfiller's clock). */
  at: number;
  /** The server's answer (a 5xx), if any: it proves nothing about the outcome. */
  code?: number;
}

/**
 * A gone Node's addresses kept by its terminating NNC (docs/decisions/0030),
 * or by this term's memory when the NNC left without the finalizer.
 */
export interface Quarantine {
  /** The terminating NNC it belongs to ('' for a memory-only one): another NNC is another quarantine. */
  nncUid: string;
  /** When its grace ends (ms). */
  until: number;
  /** A look found no pod bound to the node: over now. */
  podsGone?: boolean;
  /** When its pods are looked for next (ms), and how many looks failed in a row. */
  nextLook?: number;
  lookFailures: number;
}

/** What was reported about the node, so that each is said once while it stays the same. */
export interface Verdicts {
  /** The invalid spec or status last reported. */
  invalid?: string;
  /** The last "cannot be set up" verdict that waits for a change (a NIC outside the pod subnet). */
  setup?: string;
}

/** A record as a run reads it. */
export interface RecordView {
  readonly key: string;
  readonly name: string;
  readonly kept: Kept | undefined;
  readonly doubts: readonly Doubt[];
  readonly quarantine: Quarantine | undefined;
  readonly verdicts: Readonly<Verdicts>;
  readonly withheld: readonly string[] | undefined;
  readonly waits: string | undefined;
  readonly letGo: string | undefined;
  /** The Node as last known; undefined once it is gone (or not seen yet). */
  nodeInfo(): NodeInfo | undefined;
  /** The Node object as last known (for a write based on it). */
  nodeObject(): NodeObject | undefined;
  /** The Node of this uid is known deleted (a deletion seen, or an answer without it). */
  nodeGone(): boolean;
  /**
   * What its Node's restore annotation names: addresses of an NNC let go
   * under it, for its next NNC (docs/design/fulfiller.md#nnc-lifecycle).
   */
  nodeRestore(): NetworkContainer[] | undefined;
  /** The NNC's newest known state; undefined when it is gone. */
  nnc(): NodeNetworkConfig | undefined;
  /** When that state was received (versions.ts): a write based on it is known since. */
  nncSeen(): number;
  /** Every address the record holds. */
  holdings(): Set<string>;
}

export class NodeRecord implements RecordView {
  readonly key: string;
  readonly name: string;
  readonly node = new Versions<NodeObject>();
  nncs = new Versions<NodeNetworkConfig>();
  kept: Kept | undefined;
  /** A round's picks, until its status write is answered. */
  readonly reserved = new Set<string>();
  doubts: Doubt[] = [];
  quarantine: Quarantine | undefined;
  /** The term's fence of this node's NNC (docs/decisions/0022), while open. */
  fence: MovePoint | undefined;
  waits: string | undefined;
  withheld: string[] | undefined;
  readonly verdicts: Verdicts = {};
  /**
   * The uid of an NNC whose addresses this term let go on purpose (freed
   * after its quarantine, or handed to a re-registered Node's record):
   * nothing is kept when it goes.
   */
  letGo: string | undefined;
  /** What the address index counts for it (the book keeps it equal to holdings()). */
  holding: ReadonlySet<string> = new Set();
  /** The Node's info, read once per state of it. */
  private infoOf: { node: NodeObject; info: NodeInfo | undefined } | undefined;
  /** Since when (ms) it holds and knows nothing: dropped after a while (node-book.ts). */
  emptySince: number | undefined;

  /** When the record was made (versions.ts' order): an answer to a later request knows of its Node. */
  readonly since = nextSeq();

  constructor(key: string, name: string) {
    this.key = key;
    this.name = name;
  }

  nodeInfo(): NodeInfo | undefined {
    const node = this.node.latest();
    if (node !== this.infoOf?.node) this.infoOf = node ? { node, info: nodeInfo(node) } : undefined;
    return this.infoOf?.info;
  }

  nodeObject(): NodeObject | undefined {
    return this.node.latest();
  }

  nodeGone(): boolean {
    return this.node.isGone(this.key.startsWith('~') ? '' : this.key);
  }

  nodeRestore(): NetworkContainer[] | undefined {
    return restoreRecord(this.node.latest());
  }

  nnc(): NodeNetworkConfig | undefined {
    return this.nncs.latest();
  }

  nncSeen(): number {
    return this.nncs.latestReceived();
  }

  holdings(): Set<string> {
    const out = new Set<string>(this.reserved);
    for (const nnc of this.nncs.all()) {
      for (const ip of addressesOf(dynamicContainers(nnc))) out.add(ip);
      // A successor's restore annotation holds what it names until its status does.
      for (const ip of addressesOf(restoreRecord(nnc) ?? [])) out.add(ip);
    }
    if (this.kept) for (const ip of addressesOf(this.kept.containers)) out.add(ip);
    for (const ip of addressesOf(this.nodeRestore() ?? [])) out.add(ip);
    for (const d of this.doubts) for (const ip of d.ips) out.add(ip);
    return out;
  }

  /** It holds nothing and knows of no object: a tombstone only. */
  get isEmpty(): boolean {
    return (
      this.node.empty &&
      this.nncs.empty &&
      this.kept === undefined &&
      this.reserved.size === 0 &&
      this.doubts.length === 0
    );
  }
}
