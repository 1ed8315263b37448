// What the fulfiller needs from the API server, as two small interfaces: the
// Kubernetes adapters (kube-api.ts) implement them over HTTP, tests with
// in-memory fakes.
import type { NodeNetworkConfig } from '../nnc/types.ts';

export interface NncStatusApi {
  /** Reads the NNC fresh from the server (after a conflict). */
  get(name: string): Promise<NodeNetworkConfig>;
  /**
   * Replaces the status subresource; the body's resourceVersion makes it
   * fail with 409 Conflict when the object changed meanwhile.
   */
  replaceStatus(nnc: NodeNetworkConfig): Promise<NodeNetworkConfig>;
}

export interface SubnetStateStatus {
  exhausted: boolean;
  timestamp: string;
}

export interface SubnetStateApi {
  /** Creates the ClusterSubnetState when missing, then writes its status. */
  publish(name: string, status: SubnetStateStatus): Promise<void>;
}

/** Looks up a node's InternalIP for `nodeIP`; undefined when unknown. */
export type NodeIpLookup = (node: string) => Promise<string | undefined>;
