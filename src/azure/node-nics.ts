// What this process knows of each node's NIC: the NIC as last read or
// written (its etag is the next round's If-Match), when it last wrote it,
// whether its last round failed after a write may have landed (then the NIC
// is read afresh), and the queue that runs one node's operations one after
// the other. The reads and writes of one NIC go through here; which NIC is a
// node's is nic-directory.ts.
import type { NetworkInterface } from '@azure/arm-network';
import type { IpFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { NicApi, NicRef } from './nic-api.ts';
import { nicRefOf, sameNicRef } from './nic-api.ts';
import type { FoundNic, NicDirectory } from './nic-directory.ts';
import { nicSubnetId } from './nic-choice.ts';
import { isManagedSecondary } from './nic-plan.ts';
import type { BackendCounters } from './stats.ts';
import type { NodeRef } from '../fulfiller/backend.ts';

export interface NodeNicsOptions {
  api: NicApi;
  directory: NicDirectory;
  counters: BackendCounters;
  /** Absent: a NIC's pod IPs are in its own subnet. */
  podSubnetId?: string;
  now: () => number;
}

export class NodeNics {
  private readonly api: NicApi;
  private readonly directory: NicDirectory;
  private readonly counters: BackendCounters;
  private readonly podSubnetId: string | undefined;
  private readonly now: () => number;
  /** Per node: the NIC as last read or written (its etag is the next If-Match). */
  private readonly nics = new Map<string, NetworkInterface>();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Nodes whose last round failed after a write may have landed. */
  private readonly doubtful = new Set<string>();
  /** Per node: when our last write to its NIC was answered. */
  private readonly writtenAt = new Map<string, number>();

  constructor(options: NodeNicsOptions) {
    this.api = options.api;
    this.directory = options.directory;
    this.counters = options.counters;
    this.podSubnetId = options.podSubnetId;
    this.now = options.now;
  }

  /** Runs one node's operations one after the other. */
  async serial<T>(node: string, fn: () => Promise<T>): Promise<T> {
    const before = this.locks.get(node) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const settled = run.catch(() => undefined);
    this.locks.set(node, settled);
    try {
      return await run;
    } finally {
      if (this.locks.get(node) === settled) this.locks.delete(node);
    }
  }

  /** An operation on the node is running or queued. */
  busy(node: string): boolean {
    return this.locks.has(node);
  }

  /** When our last write to the node's NIC was answered (-Infinity: never). */
  lastWrite(node: string): number {
    return this.writtenAt.get(node) ?? -Infinity;
  }

  isDoubtful(node: string): boolean {
    return this.doubtful.has(node);
  }

  /** The node's round went through: what this process holds of its NIC is so. */
  trust(node: string): void {
    this.doubtful.delete(node);
  }

  /** A write may have landed whose answer never came: read the NIC afresh next time. */
  distrust(node: string): void {
    this.doubtful.add(node);
    this.nics.delete(node);
  }

  /** The subnet a NIC's pod IPs are in: --pod-subnet-id, else its own. */
  subnetOf(nic: NetworkInterface): string | undefined {
    return this.podSubnetId ?? nicSubnetId(nic);
  }

  /**
   * The node's NIC, as this process last wrote or listed it, holds managed
   * addresses of the families served that its NNC (any container) does not
   * list. No ARM call.
   */
  holdsUnlisted(
    node: NodeRef,
    containers: readonly NetworkContainer[],
    families: readonly IpFamily[] = [4],
  ): boolean {
    const nic = this.nics.get(node.name) ?? this.directory.peek(node);
    if (!nic) return false;
    const listed = new Set(containers.flatMap((nc) => nc.ipAssignments ?? []).map((a) => a.name));
    const subnet = this.subnetOf(nic);
    return (nic.ipConfigurations ?? []).some(
      (c) =>
        subnet &&
        families.some((f) => isManagedSecondary(c, subnet, f)) &&
        c.privateIPAddress &&
        !listed.has(c.name!),
    );
  }

  /** The NIC of a node being let go (nic-directory.ts), or the one this process last wrote. */
  async locate(
    node: NodeRef,
    containers: readonly NetworkContainer[],
  ): Promise<NicRef | undefined> {
    const cached = node.providerID ? undefined : this.nics.get(node.name);
    return cached?.name ? nicRefOf(cached) : this.directory.locate(node, containers);
  }

  /**
   * The NIC a round starts from: read afresh when in doubt, disturbed (by
   * another writer), or a scale-set instance's first.
   */
  async roundNic(node: NodeRef, found: FoundNic, disturbed: boolean): Promise<NetworkInterface> {
    const cached = this.nicOf(node.name, found.ref);
    // A scale-set instance's NIC as listed carries the NIC's etag, not its VM's: read it first.
    const fresh =
      this.doubtful.has(node.name) || disturbed || (!cached && found.ref.kind === 'scale-set');
    return fresh ? this.reread(node, found.ref) : (cached ?? found.listed);
  }

  async reread(node: NodeRef, ref: NicRef): Promise<NetworkInterface> {
    const nic = await this.api.get(ref);
    this.nics.set(node.name, nic);
    return nic;
  }

  /** One PUT of the whole NIC with If-Match `etag`; the answer is not kept (see `keep`). */
  async put(
    node: NodeRef,
    ref: NicRef,
    nic: NetworkInterface,
    etag: string | undefined,
  ): Promise<NetworkInterface> {
    this.counters.put();
    const written = await this.api.put(ref, nic, etag);
    this.writtenAt.set(node.name, this.now());
    return written;
  }

  /** The NIC as written: the next round starts from it. */
  keep(node: NodeRef, nic: NetworkInterface): void {
    this.nics.set(node.name, nic);
  }

  forget(node: string): void {
    this.nics.delete(node);
    this.doubtful.delete(node);
    this.writtenAt.delete(node);
  }

  private nicOf(node: string, ref: NicRef): NetworkInterface | undefined {
    const nic = this.nics.get(node);
    return nic?.name && sameNicRef(nicRefOf(nic), ref) ? nic : undefined;
  }
}
