// The two custom resources of group acn.azure.com, as shared/DESIGN.md fixes
// them. Everything read from the API server is untrusted: fields are optional
// here and validated where they are used.

export const GROUP = 'acn.azure.com';
export const NNC_VERSION = 'v1alpha';
export const NNC_PLURAL = 'nodenetworkconfigs';
export const NNC_KIND = 'NodeNetworkConfig';
export const CSS_VERSION = 'v1alpha1';
export const CSS_PLURAL = 'clustersubnetstates';
export const CSS_KIND = 'ClusterSubnetState';
export const DEFAULT_NAMESPACE = 'kube-system';
/** The field manager the agent writes the NNC spec as, like Azure CNS. */
export const FIELD_MANAGER = 'azure-cns';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion?: string;
  generation?: number;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
}

/** `status.scaler`: the pool's scaling parameters, set by the control plane. */
export interface ScalerSpec {
  batchSize?: number;
  requestThresholdPercent?: number;
  releaseThresholdPercent?: number;
  maxIPCount?: number;
}

export interface IpAssignment {
  /** Stable uuid of the secondary IP: the id used in `spec.ipsNotInUse`. */
  name: string;
  ip: string;
}

export type AssignmentMode = 'dynamic' | 'static';

export interface NetworkContainer {
  id: string;
  assignmentMode?: AssignmentMode;
  type?: string;
  primaryIP?: string;
  subnetName?: string;
  subnetAddressSpace?: string;
  defaultGateway?: string;
  version?: number;
  nodeIP?: string;
  ipAssignments?: IpAssignment[];
}

export interface NncSpec {
  requestedIPCount?: number;
  ipsNotInUse?: string[];
}

export interface NncStatus {
  scaler?: ScalerSpec;
  networkContainers?: NetworkContainer[];
  assignedIPCount?: number;
  status?: string;
}

export interface NodeNetworkConfig {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: NncSpec;
  status?: NncStatus;
}

export interface ClusterSubnetState {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  status?: { exhausted?: boolean; timestamp?: string };
}

/** The REST collection path of a namespace's NodeNetworkConfigs (for watches). */
export function nncPath(namespace: string): string {
  return `/apis/${GROUP}/${NNC_VERSION}/namespaces/${namespace}/${NNC_PLURAL}`;
}

/** The REST collection path of a namespace's ClusterSubnetStates (for watches). */
export function cssPath(namespace: string): string {
  return `/apis/${GROUP}/${CSS_VERSION}/namespaces/${namespace}/${CSS_PLURAL}`;
}

/** The node's dynamic network containers: the ones whose IPs the pool manages. */
export function dynamicContainers(nnc: NodeNetworkConfig): NetworkContainer[] {
  return (nnc.status?.networkContainers ?? []).filter(
    (nc) => (nc.assignmentMode ?? 'dynamic') === 'dynamic',
  );
}

/** Why an NNC cannot drive the pool, or undefined when it can. */
export function invalidNncReason(nnc: NodeNetworkConfig | undefined | null): string | undefined {
  if (nnc === null || typeof nnc !== 'object') return 'not an object';
  const scaler = nnc.status?.scaler;
  if (scaler === null || typeof scaler !== 'object') return 'status.scaler is missing';
  if (!Array.isArray(nnc.status?.networkContainers) || dynamicContainers(nnc).length === 0) {
    return 'no dynamic network container in status.networkContainers';
  }
  return undefined;
}
