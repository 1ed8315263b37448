// The fulfiller's backend seam as agreed in notes/SEAM.md (owner: the
// fulfiller rework). Written here so the Azure backend type-checks before
// that rework lands; phase 2 replaces these with the fulfiller's own types.
import type { NetworkContainer } from '../nnc/types.ts';
import type { SubnetInfo } from '../fulfiller/backend.ts';

export type { SubnetInfo };
export { SubnetFullError } from '../fulfiller/backend.ts';

export interface NodeRef {
  name: string;
  providerID?: string;
}

/** The node's dynamic container as the backend now holds it. */
export interface HeldContainer {
  primaryIP: string;
  subnetName: string;
  subnetAddressSpace: string;
  defaultGateway: string;
  type: string;
  nodeIP?: string;
  /** Every secondary IP held, with its id. */
  ipAssignments: Array<{ name: string; ip: string }>;
}

export interface PoolChange {
  /** The node's current dynamic container in its NNC status (absent: none yet). */
  container?: NetworkContainer;
  /** How many new IPs this round. */
  add: number;
  /** Assignments to release (ids from spec.ipsNotInUse). */
  remove: Array<{ name: string; ip: string }>;
}

export interface ApplyResult {
  held: HeldContainer;
  /** Fewer added than asked: the subnet (or the NIC) is full. */
  short: boolean;
}

export interface IpBackend {
  readonly kind: string;
  subnets(): SubnetInfo[];
  /** One round for one node: release `remove`, add up to `add`, as ONE backend write. */
  apply(node: NodeRef, change: PoolChange): Promise<ApplyResult>;
  /** Node deleted: free everything it held (secondaries and primary). */
  releaseAll(node: NodeRef, container: NetworkContainer | undefined): Promise<void>;
}

/**
 * A node whose container cannot be set up by this backend at all (no
 * providerID, no NIC): the fulfiller reports it (status, Warning Event) and
 * tries again later.
 */
export class NodeBackendError extends Error {
  override readonly name = 'NodeBackendError';
  readonly reason: 'NoProviderID' | 'BadProviderID' | 'NicNotFound';

  constructor(reason: NodeBackendError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}
