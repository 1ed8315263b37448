// What the fulfiller remembers about one node beyond what the cluster shows
// (docs/design/fulfiller.md#one-node-one-record), as Cilium's operator keeps a
// `Node` per node: the verdicts it has reported, so that each is said once
// (a log line and a Warning Event) while it stays the same. A write in doubt
// is not here: it is the ledger's, with the addresses it claimed (ledger.ts).
// Kept by the fulfiller across terms, forgotten with the node's NNC.

/** One node's record. */
export interface NodeRecord {
  /** The invalid spec or status last reported; undefined while the NNC is valid. */
  invalid?: string;
  /**
   * The last "cannot be set up" verdict that waits for a change (a NIC
   * outside the pod subnet); undefined once the node's round went through.
   */
  setup?: string;
  /**
   * Addresses the backend gave the node that another NNC's status (or a
   * claim, or a deleted node's kept addresses) still holds, withheld from
   * its status (status-round.ts); the node gets another go when addresses
   * come free. Undefined when none.
   */
  withheld?: string[];
}

/** Every node's record, by name. */
export class NodeRecords {
  private readonly byName = new Map<string, NodeRecord>();

  /** The node's record, made on first use. */
  of(name: string): NodeRecord {
    let record = this.byName.get(name);
    if (!record) this.byName.set(name, (record = {}));
    return record;
  }

  /** Whether an invalid spec or status is reported for the node now. */
  invalid(name: string): boolean {
    return this.byName.get(name)?.invalid !== undefined;
  }

  /** Nodes with addresses withheld from their status (see NodeRecord.withheld). */
  withholding(): string[] {
    return [...this.byName].filter(([, r]) => r.withheld !== undefined).map(([n]) => n);
  }

  /** The node's NNC is gone: what was reported about it is forgotten. */
  forget(name: string): void {
    this.byName.delete(name);
  }
}
