// The one seam between the fulfiller and whatever really owns the addresses.
// The CIDR backend hands them out from a local pod subnet; an Azure backend
// (@azure/arm-network: secondary IP configurations on the node's NIC) can
// implement the same methods later without touching the control loop.
import type { NetworkContainer } from '../nnc/types.ts';

export interface SubnetInfo {
  /** Name used as the NC's `subnetName` and as the ClusterSubnetState name. */
  name: string;
  /** Address space, e.g. "10.240.0.0/16". */
  cidr: string;
  defaultGateway: string;
  /** Addresses that may ever be handed out. */
  capacity: number;
  /** Addresses free right now. */
  free: number;
}

/** The network-level fields of a new dynamic container (id and IPs are the fulfiller's). */
export interface ContainerSetup {
  primaryIP: string;
  subnetName: string;
  subnetAddressSpace: string;
  defaultGateway: string;
  type: string;
}

export interface IpBackend {
  /** Short name for logs: "cidr", "azure". */
  readonly kind: string;
  /** Every subnet the backend allocates from, with its current free count. */
  subnets(): SubnetInfo[];
  /**
   * Learns addresses a node already holds (from its NNC status), so they are
   * never handed out again. Called for every NNC seen, before any allocation.
   */
  observe(node: string, containers: NetworkContainer[]): void;
  /** The node's NNC is gone: everything it held is free again. */
  forget(node: string, containers: NetworkContainer[]): Promise<void>;
  /** Sets up a node's first dynamic container (its primary IP and subnet). */
  setupContainer(node: string): Promise<ContainerSetup>;
  /** Undoes `setupContainer` when the status carrying it could not be written. */
  teardownContainer(node: string, setup: ContainerSetup): Promise<void>;
  /**
   * Allocates up to `count` secondary IPs for the container; resolves to
   * fewer (maybe none) when the subnet runs out. Never an address held by
   * anyone.
   */
  allocate(node: string, nc: NetworkContainer, count: number): Promise<string[]>;
  /** Frees addresses the node no longer holds (after its status was written). */
  release(node: string, nc: NetworkContainer, ips: string[]): Promise<void>;
}

/** Raised by `setupContainer` when the subnet has no address left for a primary IP. */
export class SubnetFullError extends Error {
  override readonly name = 'SubnetFullError';
}
