// What the fulfiller needs from the API server, as small interfaces: the
// Kubernetes adapters (kube-api.ts) implement them over HTTP, tests with
// in-memory fakes. Every method here writes except `get` and the lists; the fulfiller calls
// them only while it leads (and run.ts gates them on the lease besides).
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import type { NodeObject } from './nodes.ts';
import type { PodAddresses } from './pod-rescue.ts';
import type { ArmSubnetRef } from './backend.ts';

export interface NncStatusApi {
  /** Reads the NNC fresh from the server (after a conflict or a write in doubt). */
  get(name: string): Promise<NodeNetworkConfig>;
  /**
   * Replaces the status subresource; the body's resourceVersion makes it
   * fail with 409 Conflict when the object changed meanwhile.
   */
  replaceStatus(nnc: NodeNetworkConfig): Promise<NodeNetworkConfig>;
}

export interface NncOwner {
  name: string;
  uid?: string;
}

export interface NncLifecycleApi {
  /**
   * Creates the node's NNC (empty spec, owned by its Node, with the
   * addresses finalizer: quarantine.ts), with the containers it must get
   * back in its restore annotation when it replaces one; 409 when it exists.
   */
  create(owner: NncOwner, restore?: NetworkContainer[]): Promise<NodeNetworkConfig>;
  /** Removes the restore annotation (a merge patch of metadata only). */
  clearRestore(name: string): Promise<NodeNetworkConfig>;
  /**
   * Sets the Node's restore annotation (the addresses its next NNC gets
   * back) with the addresses finalizer, or (undefined) removes both: a
   * merge patch of metadata only, with the Node's uid and resourceVersion
   * as read (422 for another Node of the name, 409 when it changed).
   */
  setNodeRestore(node: NodeObject, restore: NetworkContainer[] | undefined): Promise<NodeObject>;
  /** Deletes the NNC of that uid (a recreated one of the same name is left alone); 404 is success. */
  delete(name: string, uid: string | undefined): Promise<void>;
  /**
   * Sets the NNC's leader-term annotation (a merge patch of metadata only,
   * never the spec): it moves the resourceVersion, so no status write based
   * on an older version (a previous leader's late one) can land any more.
   */
  markTerm(name: string, term: string): Promise<NodeNetworkConfig>;
  /**
   * Replaces the NNC's finalizers, and with `owner` its ownerReferences (a
   * merge patch of metadata only, with the resourceVersion read as its
   * precondition: 409 when it changed).
   */
  setFinalizers(
    nnc: NodeNetworkConfig,
    finalizers: string[],
    owner?: NncOwner,
  ): Promise<NodeNetworkConfig>;
}

export interface SubnetStateStatus {
  exhausted: boolean;
  timestamp: string;
  /** The ARM subnet behind this CSS, when the backend is Azure. */
  armSubnet?: ArmSubnetRef;
}

export interface SubnetStateApi {
  /** Creates the ClusterSubnetState when missing, then writes its status. */
  publish(name: string, status: SubnetStateStatus): Promise<void>;
}

/** A list and the resourceVersion it was read at. */
export interface Listed<T> {
  items: T[];
  resourceVersion?: string;
}

/** Fresh lists, read by a new leader before its first allocation (docs/design/fulfiller.md#high-availability). */
export interface ClusterListApi {
  listNncs(): Promise<Listed<NodeNetworkConfig>>;
  listNodes(): Promise<Listed<NodeObject>>;
  /**
   * True while some pod is bound to that node name (quarantine-pods.ts);
   * without it a quarantine lasts its whole grace period.
   */
  anyPodOn?(node: string): Promise<boolean>;
  /**
   * The Node of that name now, or undefined (a fresh list by name): read
   * before anything is done to a node's addresses because its Node is gone,
   * or (an NNC terminating under a Node the watch shows) because it lives,
   * since the watches of Nodes and NNCs are not ordered with each other.
   */
  getNode?(node: string): Promise<NodeObject | undefined>;
  /**
   * The addresses every running pod bound to a node reports, read at a new
   * term's start (pod-rescue.ts); without it an address whose record was
   * lost is free to the new leader.
   */
  listPodAddresses?(): Promise<PodAddresses[]>;
}
