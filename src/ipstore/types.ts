// The node IP store: every secondary IP the node's NNC status backs, with its
// state and the pod that holds it. The monitor sees only the narrow
// `PoolIpStore` port (src/monitor/ports.ts); the node API and the sidecar use
// this whole interface. Implementations are synchronous: the store is a local
// embedded database, and every method is one transaction.
import type { IpFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { PoolHistory } from './pool-history.ts';

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
  /**
   * Set when the NNC status no longer backs this IP: an Assigned IP kept for
   * its pod, or (from `release`) one that was removed as its pod let go.
   */
  vanished?: true;
}

/** What the store knows of a network container: enough to answer the CNI. */
export interface ContainerInfo {
  id: string;
  subnetAddressSpace: string;
  defaultGateway: string;
  primaryIP: string;
  /** Absent while nothing in the container says (no subnet, no address). */
  family?: IpFamily;
}

export interface InventoryChange {
  added: IpRecord[];
  removed: IpRecord[];
  /** Assigned IPs the NNC no longer backs: kept, and reported as errors. */
  assignedVanished: IpRecord[];
  /**
   * IPs of the status the store could not take yet, with the reason: e.g. an
   * address still held by a vanished Assigned IP under another id. Retried on
   * the next sync.
   */
  conflicts?: { id: string; ip: string; ncId: string; reason: string }[];
}

export interface SyncOptions {
  /**
   * The state IPs new to the store start in: Available (default), or
   * PendingProgramming when the host must program them before use.
   */
  newIpState?: 'Available' | 'PendingProgramming';
}

/** What `restorePendingRelease` did with the ids it was given. */
export interface RestoreResult {
  /** Ids that are PendingRelease now (they were in the list and releasable). */
  restored: string[];
  /** PendingRelease ids not in the list: made Available (never announced). */
  unmarked: string[];
  /** Ids in the list that a pod holds: kept Assigned (see the store's docs). */
  assigned: string[];
  /** Ids in the list the store does not know. */
  unknown: string[];
}

export type StateCounts = Record<IpState, number>;

/** The counts of one family's addresses (see NodeIpStore.countsByFamily). */
export interface FamilyCounts {
  family: IpFamily;
  counts: StateCounts;
}

/**
 * What a release frees: every address the pod interface held, one per
 * family, IPv4 first (`ips`); its own fields are the first's, so a caller
 * of a single-stack pool reads it as the one record it is.
 */
export interface Released extends IpRecord {
  ips: IpRecord[];
}

export interface AssignRequest extends PodInfo {
  /** Specific addresses the CNI asks for; empty or absent: any Available IP. */
  desiredIPAddresses?: string[];
}

/**
 * What `assign` returns: the pod's addresses, one per family of the pool,
 * IPv4 first (`ips`; its own fields are the first's), and what the same
 * transaction released.
 */
export interface Assignment extends Released {
  /**
   * The same pod's assignments under another infraContainerID (its sandbox
   * was recreated: the kubelet runs one per pod), released in the same
   * transaction; as they were before their release. Absent when none.
   */
  replaced?: IpRecord[];
}

/** The assignment that holds an IP: the pod interface and its sandbox. */
export interface Holder {
  podInterfaceID: string;
  infraContainerID: string;
}

/**
 * The sandbox id of an adopted IP: the store learnt the address from the
 * pod's status, not from a CNI request, so the real sandbox is unknown.
 */
export const ADOPTED_SANDBOX = 'adopted';

/** True when the IP's holder was adopted from the pod's status (see `adopt`). */
export function isAdopted(pod: PodInfo | undefined): boolean {
  return pod?.infraContainerID === ADOPTED_SANDBOX;
}

export interface AdoptRequest {
  /** The address the pod reports in `status.podIPs`. */
  ip: string;
  podName: string;
  podNamespace: string;
  /**
   * The assignment expected to hold the address now, when it is taken over
   * from a pod that is gone; an IP held by anyone else is a conflict.
   */
  from?: Holder;
}

export type AdoptResult =
  /** Now Assigned to the pod; `previous` is the record as it was. */
  | { outcome: 'adopted'; record: IpRecord; previous: IpRecord }
  /** Already Assigned to this pod: nothing changed. */
  | { outcome: 'held'; record: IpRecord }
  /** Assigned to another pod (not `from`): nothing changed. */
  | { outcome: 'conflict'; record: IpRecord }
  /** The store has no IP with this address (the NNC does not back it). */
  | { outcome: 'unknown' };

/**
 * Raised when no IP can be handed out (CNS ReturnCode 32): in a dual-stack
 * pool, when either family has none Available (then neither is assigned).
 */
export class NoAvailableIpError extends Error {
  override readonly name: string = 'NoAvailableIpError';
  /** Older assignments of the pod released all the same (see Assignment.replaced). */
  replaced?: IpRecord[];
}

/**
 * Raised when the specific addresses a CNI asked for cannot be handed out
 * (unknown, not Available, or the pod interface already holds another one).
 */
export class DesiredIpUnavailableError extends NoAvailableIpError {
  override readonly name: string = 'DesiredIpUnavailableError';
}

/** Raised for malformed input (CNS ReturnCode 23); nothing was changed. */
export class InvalidIpStoreInputError extends Error {
  override readonly name = 'InvalidIpStoreInputError';
  /** The input field it is about, when known, e.g. `networkContainers[0].ipAssignments[2].ip`. */
  readonly field: string | undefined;
  constructor(message: string, field?: string) {
    super(message);
    this.field = field;
  }
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
  syncInventory(containers: NetworkContainer[], options?: SyncOptions): InventoryChange;
  /**
   * At start: ids already in `spec.ipsNotInUse` become PendingRelease again.
   * The PendingRelease set becomes exactly the announced ids: a PendingRelease
   * IP the spec never carried is made Available, and an id a pod holds stays
   * Assigned (a live pod's IP is never handed back). The SQLite store returns
   * what it did (RestoreResult) so the caller can log it.
   */
  restorePendingRelease(ids: string[]): RestoreResult | void;
  /**
   * Marks IPs PendingRelease, PendingProgramming first, then Available,
   * never Assigned; all or nothing (throws InsufficientReleasableError and
   * changes nothing). Returns the ids marked. `count` is in pods: each
   * family comes down to `count` below the family that has the most active
   * IPs (poolView), so a pool whose families are level marks `count` of each,
   * and a family that lags (its subnet exhausted) gives back only what it
   * holds above the others.
   */
  markPendingRelease(count: number): string[];
  /** Ids of every PendingRelease IP, sorted. */
  pendingReleaseIds(): string[];
  /**
   * What the pool monitor reads before each decision, in one transaction:
   * the PendingRelease ids (sorted), the IPs the status backs that are not
   * PendingRelease (`active`), and those that could be marked (`markable`:
   * Available and PendingProgramming).
   */
  poolView(): PoolView;
  /**
   * The pool history kept with the store (what `--release-delay auto`
   * learns from), or undefined when this store keeps none.
   */
  poolHistory(): PoolHistory | undefined;
  /**
   * One Available IP of each family the pool has (the families of the
   * containers the status lists), or none: NoAvailableIpError when any
   * family has none free, and nothing assigned. Idempotent per
   * podInterfaceID (what it holds is returned as it is). A request of pod ns/name under a new infraContainerID releases the
   * pod's assignments under other ones in the same transaction (even when
   * no IP can be handed out then): they are returned in `replaced`.
   */
  assign(request: AssignRequest): Assignment;
  /**
   * Releases every IP held by the pod interface (one per family): Available
   * again, or removed if the status no longer backs it. Idempotent:
   * undefined when nothing held.
   */
  release(podInterfaceID: string): Released | undefined;
  /**
   * Releases IP `id` and the rest of its assignment (the holder's address
   * of the other family) as `release` does, but only while `holder` still
   * holds it (a reclaim decided on an older view never undoes a newer
   * assignment); undefined when it does not.
   */
  reclaim(id: string, holder: Holder): Released | undefined;
  /**
   * Assigns the IP with address `ip` to the pod that reports it in its
   * status (sandbox ADOPTED_SANDBOX), whatever its state, unless another pod
   * holds it (see AdoptRequest.from). One transaction; see AdoptResult.
   */
  adopt(request: AdoptRequest): AdoptResult;
  list(states?: readonly IpState[]): IpRecord[];
  counts(): StateCounts;
  /** The counts per family the pool has (its containers' families), IPv4 first. */
  countsByFamily(): FamilyCounts[];
  container(ncId: string): ContainerInfo | undefined;
  close(): void;
}

/**
 * See NodeIpStore.poolView. In pods: `activeCount` is the active IPs of the
 * family that has most, `markableCount` the most `markPendingRelease` can
 * take (markable IPs of a family, plus how far it lags behind the largest).
 * Of a single-family pool, its counts as they are.
 */
export interface PoolView {
  pendingReleaseIds: string[];
  activeCount: number;
  markableCount: number;
}
