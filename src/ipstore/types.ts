// The node IP store: every secondary IP the node's NNC status backs, with its
// state and the pod that holds it. The monitor sees only the narrow
// `PoolIpStore` port (src/monitor/ports.ts); the node API and the sidecar use
// this whole interface. Implementations are synchronous: the store is a local
// embedded database, and every method is one transaction.
import type { NetworkContainer } from '../nnc/types.ts';

export type IpState = 'Available' | 'Assigned' | 'PendingRelease' | 'PendingProgramming';
export const IP_STATES: readonly IpState[] = [
  'Available',
  'Assigned',
  'PendingRelease',
  'PendingProgramming',
];

export interface PodInfo {
  podInterfaceID: string;
  infraContainerID: string;
  podName: string;
  podNamespace: string;
}

export interface IpRecord {
  /** The IP's uuid from `ipAssignments[].name`; the id in `spec.ipsNotInUse`. */
  id: string;
  ip: string;
  /** Network container id the IP belongs to. */
  ncId: string;
  state: IpState;
  /** Set exactly when state is Assigned. */
  pod?: PodInfo;
  /** Unix ms of the last state change. */
  updatedAt: number;
}

/** What the store knows of a network container: enough to answer the CNI. */
export interface ContainerInfo {
  id: string;
  subnetAddressSpace: string;
  defaultGateway: string;
  primaryIP: string;
}

export interface InventoryChange {
  added: IpRecord[];
  removed: IpRecord[];
  /** Assigned IPs the NNC no longer backs: kept, and reported as errors. */
  assignedVanished: IpRecord[];
}

export type StateCounts = Record<IpState, number>;

export interface AssignRequest extends PodInfo {
  /** Specific addresses the CNI asks for; empty or absent: any Available IP. */
  desiredIPAddresses?: string[];
}

/** Raised when no IP can be handed out (CNS ReturnCode 32). */
export class NoAvailableIpError extends Error {
  override readonly name = 'NoAvailableIpError';
}

/** Raised when marking cannot be done in full; nothing was changed. */
export class InsufficientReleasableError extends Error {
  override readonly name = 'InsufficientReleasableError';
  readonly wanted: number;
  readonly releasable: number;
  constructor(wanted: number, releasable: number) {
    super(`cannot mark ${wanted} IPs PendingRelease: only ${releasable} are not Assigned`);
    this.wanted = wanted;
    this.releasable = releasable;
  }
}

export interface NodeIpStore {
  /**
   * Makes the inventory follow the dynamic network containers of the NNC
   * status: new IPs become Available, IPs that left are removed, but an
   * Assigned IP never is (it is returned in `assignedVanished`).
   */
  syncInventory(containers: NetworkContainer[]): InventoryChange;
  /** At start: ids already in `spec.ipsNotInUse` become PendingRelease again. */
  restorePendingRelease(ids: string[]): void;
  /**
   * Marks `count` IPs PendingRelease, PendingProgramming first, then
   * Available, never Assigned; all or nothing (throws
   * InsufficientReleasableError and changes nothing). Returns the ids marked.
   */
  markPendingRelease(count: number): string[];
  /** Ids of every PendingRelease IP, sorted. */
  pendingReleaseIds(): string[];
  /** Idempotent per podInterfaceID; throws NoAvailableIpError when none is free. */
  assign(request: AssignRequest): IpRecord;
  /**
   * Releases the IP held by the pod interface: Available again, or stays
   * PendingRelease if it was marked. Idempotent: undefined when nothing held.
   */
  release(podInterfaceID: string): IpRecord | undefined;
  list(states?: readonly IpState[]): IpRecord[];
  counts(): StateCounts;
  container(ncId: string): ContainerInfo | undefined;
  close(): void;
}
