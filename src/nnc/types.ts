// The two custom resources of group acn.azure.com, as
// docs/design/contracts.md#custom-resources fixes them. Everything read from
// the API server is untrusted: fields are optional here and validated where
// they are used.

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
  /** Set when the object is being deleted and waits for its finalizers. */
  deletionTimestamp?: string;
  finalizers?: string[];
  /** The objects this one belongs to (an NNC: its Node; the garbage collector deletes it after them). */
  ownerReferences?: Array<{ apiVersion?: string; kind?: string; name?: string; uid?: string }>;
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
  status?: {
    exhausted?: boolean;
    timestamp?: string;
    /** pool-monitor's addition (Azure backend): the ARM subnet behind this CSS. */
    armSubnet?: { name?: string; id?: string };
  };
}

/** The REST collection path of a namespace's NodeNetworkConfigs (for watches). */
export function nncPath(namespace: string): string {
  return `/apis/${GROUP}/${NNC_VERSION}/namespaces/${namespace}/${NNC_PLURAL}`;
}

/** The REST collection path of a namespace's ClusterSubnetStates (for watches). */
export function cssPath(namespace: string): string {
  return `/apis/${GROUP}/${CSS_VERSION}/namespaces/${namespace}/${CSS_PLURAL}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The node's dynamic network containers: the ones whose IPs the pool
 * manages. Entries that are not objects are skipped (everything read from
 * the API server is untrusted).
 */
export function dynamicContainers(nnc: NodeNetworkConfig): NetworkContainer[] {
  const list: unknown = nnc?.status?.networkContainers;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (nc): nc is NetworkContainer => isObject(nc) && (nc.assignmentMode ?? 'dynamic') === 'dynamic',
  );
}

/** The IP assignments of a container that are objects (anything else skipped). */
export function assignmentsOf(nc: NetworkContainer | undefined): IpAssignment[] {
  const list: unknown = nc?.ipAssignments;
  return Array.isArray(list) ? list.filter((a): a is IpAssignment => isObject(a)) : [];
}

/** Why an NNC cannot drive the pool, naming the field, or undefined when it can. */
export function invalidNnc(
  nnc: NodeNetworkConfig | undefined | null,
): { field: string; reason: string } | undefined {
  if (!isObject(nnc)) return { field: '', reason: 'not an object' };
  if (!isObject(nnc.status))
    return { field: 'status', reason: 'status.scaler is missing (no status)' };
  if (!isObject(nnc.status.scaler))
    return { field: 'status.scaler', reason: 'status.scaler is missing' };
  const list: unknown = nnc.status.networkContainers;
  if (list !== undefined && list !== null && !Array.isArray(list))
    return { field: 'status.networkContainers', reason: 'status.networkContainers is not a list' };
  for (const [i, nc] of (Array.isArray(list) ? list : []).entries()) {
    const at = `status.networkContainers[${i}]`;
    if (!isObject(nc)) return { field: at, reason: `${at} is not an object` };
    const ips: unknown = nc.ipAssignments;
    if (ips === undefined || ips === null) continue;
    if (!Array.isArray(ips))
      return { field: `${at}.ipAssignments`, reason: `${at}.ipAssignments is not a list` };
    const j = ips.findIndex((a) => !isObject(a));
    if (j >= 0)
      return {
        field: `${at}.ipAssignments[${j}]`,
        reason: `${at}.ipAssignments[${j}] is not an object`,
      };
  }
  if (dynamicContainers(nnc).length === 0) {
    return {
      field: 'status.networkContainers',
      reason: 'no dynamic network container in status.networkContainers',
    };
  }
  return undefined;
}

/** Why an NNC cannot drive the pool, or undefined when it can. */
export function invalidNncReason(nnc: NodeNetworkConfig | undefined | null): string | undefined {
  return invalidNnc(nnc)?.reason;
}

/**
 * On an NNC created to replace one deleted under a live Node: the containers
 * it must get back, as JSON, until its status holds them. It carries the
 * record from the terminating NNC to its successor, so a leader that takes
 * over between the two still restores them (docs/decisions/0030; the fulfiller writes it,
 * src/fulfiller/quarantine.ts).
 */
/** The NNC has a deletionTimestamp: it is being deleted (kept while a finalizer is on). */
export function isTerminating(nnc: NodeNetworkConfig | undefined): boolean {
  return typeof nnc?.metadata?.deletionTimestamp === 'string';
}

export const RESTORE_ANNOTATION = 'pool-monitor.acn.azure.com/restore';

/**
 * The containers an object's restore annotation names (an NNC's: its
 * status is to get them; a Node's: its next NNC is), or undefined (absent
 * or unreadable).
 */
export function restoreRecord(
  object: { metadata?: { annotations?: Record<string, string> } } | undefined,
): NetworkContainer[] | undefined {
  const raw = object?.metadata?.annotations?.[RESTORE_ANNOTATION];
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? (parsed as NetworkContainer[]) : undefined;
  } catch {
    return undefined;
  }
}
