// The one seam between the fulfiller and whatever really owns the addresses
// (docs/design/fulfiller.md#the-backend-seam). One round for one node is ONE
// backend write: release what the node gave back, add up to what it lacks,
// and say what the node now holds. The backend names the IP ids (an Azure
// NNC IP id IS the ipConfiguration name; the CIDR backend makes uuids).
//
// The fulfiller keeps everything both backends share: the queue, priorities,
// backoff, CSS publishing, the status write with its 409 re-read, and the
// bookkeeping of writes in doubt (node-book.ts). A backend never sees an
// NNC's resourceVersion.
//
// What the seam adds to `apply` and `subnets`:
// - `BackendContext` is what a backend gets at construction: the addresses
//   in use (the CIDR backend allocates from them; Azure may ignore them), the fulfiller's metrics registry (a backend adds its own series, e.g.
//   ARM calls) and a logger. `BackendFactory` builds a backend from it.
// - `apply` is called only while this replica leads; `releaseAll` before the
//   Node's NNC is deleted, so a crash in between leaves an NNC to retry from,
//   never an address nobody records.
// - `start()` (optional) is awaited before the fulfiller's first term, so the
//   first CSS it publishes has the backend's real free count (Azure: the pod
//   subnet and its usage, read from ARM). A factory may be async (Azure loads
//   its credential lazily).
// - `needsRound()` (optional) tells the fulfiller a node holds more than its
//   NNC lists (an interrupted round); the fulfiller then calls apply.
// - `NodeSetupError` is the typed error for "cannot set this node up at all"
//   (no NIC, no providerID): the fulfiller logs it, raises a Warning Event on
//   the NNC and retries with backoff. `SubnetFullError` stays for "no address
//   left for the container's primary IP".
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { IpFamily } from '../nnc/family.ts';
import type { AddressIndex } from './address-index.ts';

export interface SubnetInfo {
  /** Name used as the NC's `subnetName` and as the ClusterSubnetState name. */
  name: string;
  /** Its address family (a dual-stack pool has one subnet of each). */
  family: IpFamily;
  /** Address space, e.g. "10.240.0.0/16". */
  cidr: string;
  defaultGateway: string;
  /** Addresses that may ever be handed out. */
  capacity: number;
  /** Addresses free right now. */
  free: number;
  /** The subnet as ARM names it (Azure backend): written to the CSS status, whose own name may differ (container.ts cssNameOf). */
  armSubnet?: ArmSubnetRef;
}

/** An ARM subnet's name and resource id. */
export interface ArmSubnetRef {
  name: string;
  id: string;
}

/** The node as the backend needs it, from the Node object. */
export interface NodeRef {
  name: string;
  /** `spec.providerID`, e.g. azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/VM. */
  providerID?: string;
}

/** The node's dynamic container as the backend now holds it. */
export interface HeldContainer {
  primaryIP: string;
  subnetName: string;
  subnetAddressSpace: string;
  defaultGateway: string;
  type: string;
  /** The node's own address when the backend knows it (Azure: the NIC's primary IP). */
  nodeIP?: string;
  /** Every secondary IP held, with its id. */
  ipAssignments: Array<{ name: string; ip: string }>;
}

/** What one round changes in one address family's container of a node. */
export interface FamilyChange {
  family: IpFamily;
  /** The node's container of this family in its NNC status (absent: none yet). */
  container?: NetworkContainer;
  /** How many new IPs this round. */
  add: number;
  /** Assignments to release (ids from spec.ipsNotInUse). */
  remove: Array<{ name: string; ip: string }>;
}

export interface PoolChange {
  /**
   * One per address family of the node's pool, IPv4 first (docs/design/contracts.md,
   * "Address families"): each family's container holds as many addresses as
   * the node asks for.
   */
  families: FamilyChange[];
  /**
   * Holds addresses the backend picks from the addresses in use (the CIDR
   * backend), before it returns: no other round can pick them until this
   * round's status write is answered.
   */
  hold?(ips: readonly string[]): void;
}

export interface ApplyResult {
  /** Each family's container as the backend now holds it, in the order of `families`. */
  held: HeldContainer[];
  /** Fewer added than asked in some family: its subnet is full. */
  short: boolean;
  /**
   * Addresses the node's status lists that the backend proves gone for good
   * (another writer removed them and they cannot come back: ARM gave them to
   * another NIC), reported by the backend with an Event: the status may drop
   * them (status-gate.ts). Nothing else ever leaves a status but what the
   * node released.
   */
  lost?: string[];
}

export interface IpBackend {
  /** "cidr" | "azure". */
  readonly kind: string;
  /** Every subnet the backend allocates from, with its current free count (for the CSS). */
  subnets(): SubnetInfo[];
  /** The address families every node's pool has, IPv4 first. */
  families(): IpFamily[];
  /** One round for one node: in each family release `remove`, add up to `add`, as ONE backend write. */
  apply(node: NodeRef, change: PoolChange): Promise<ApplyResult>;
  /** Node deleted: free everything it held (secondaries and primaries), every family. */
  releaseAll(node: NodeRef, containers: readonly NetworkContainer[]): Promise<void>;
  /** Reads what subnets() reports; awaited before the fulfiller first leads. */
  start?(): Promise<void>;
  /**
   * True when the backend holds for this node what its NNC does not list (a
   * round whose status write never came: a crash, an answer lost after the
   * write landed), or cannot tell: the node gets a round even when its spec
   * asks for nothing, so what it holds ends up in its status. Sync and cheap
   * (asked on every resync); absent: never.
   */
  needsRound?(node: NodeRef, containers: readonly NetworkContainer[]): boolean;
  /**
   * Called once by the fulfiller with the ways a backend may ask it for work
   * from its own background reads (docs/decisions/0019): optional.
   */
  attach?(hooks: BackendHooks): void;
  /**
   * Whether `id` is an IP id this backend could have made (optional: any
   * non-empty id when absent). A status holding other ids was not written by
   * a fulfiller; it is refused rather than taken as the record.
   */
  validId?(id: string): boolean;
  /**
   * New dynamic containers (one per family of `ips`) holding `ips`, addresses a node's pods report
   * that no record holds any more (pod-rescue.ts), with a fresh primary IP
   * and new ids; undefined when the subnet has no address left for the
   * primary. Optional: a backend whose own store still holds what its nodes
   * have (the Azure NICs) rebuilds from it at the node's next round.
   */
  rebuild?(node: NodeRef, ips: readonly string[]): NetworkContainer[] | undefined;
  /**
   * Whether `ip` is an address this backend could have handed out (optional:
   * any address of its families when absent). A status holding others is refused.
   */
  validAddress?(ip: string): boolean;
}

/** What a backend may ask of the fulfiller (`IpBackend.attach`). */
export interface BackendHooks {
  /** This node needs a round: queued when `needsRound` (or its NNC) says so. */
  nodeNeedsRound(node: string): void;
  /** A background read found addresses free: nodes left short get another go. */
  addressesFreed(): void;
  /** A Warning Event on the node's NNC (while this replica leads). */
  warn(node: string, reason: string, message: string): void;
}

export interface BackendContext {
  /**
   * Every address some node record holds (a status, a write in doubt, a
   * quarantine, a round's picks: node-book.ts), and each that turns used or
   * free: the CIDR backend allocates from it; Azure may ignore it.
   */
  addresses: Pick<AddressIndex, 'isUsed' | 'used' | 'subscribe'>;
  /** The fulfiller's metrics registry; a backend registers its own series here. */
  registry: Registry;
  logger: Logger;
}

export type BackendFactory = (context: BackendContext) => IpBackend | Promise<IpBackend>;

/** No address left for a new container's primary IP. */
export class SubnetFullError extends Error {
  override readonly name = 'SubnetFullError';
}

/** The backend cannot set this node up at all (no providerID, no NIC found, ...). */
export class NodeSetupError extends Error {
  override readonly name = 'NodeSetupError';
  /** Short UpperCamelCase reason for the Warning Event, e.g. "NoProviderID". */
  readonly reason: string;
  /**
   * True when only a change (of the Node, or of what the backend lists) can
   * cure it: the queue does not retry the node with backoff (queue.ts).
   */
  readonly waitsForChange: boolean;
  constructor(reason: string, message: string, options: { waitsForChange?: boolean } = {}) {
    super(message);
    this.reason = reason;
    this.waitsForChange = options.waitsForChange ?? false;
  }
}
