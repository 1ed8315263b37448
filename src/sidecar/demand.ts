// Demand and exhaustion as pure functions of what the informers hold, so the
// rules of docs/design/scaling.md#inputs are tested without an API server:
// - demand counts the node's pods that need a pod IP: not hostNetwork, not
//   finished (a completed Job pod stops counting);
// - a subnet is exhausted when the ClusterSubnetState named as the node's
//   dynamic network container's subnet says so, or (mode "any", as Azure CNS)
//   when any CSS in the namespace does; a dual-stack node has a container,
//   a subnet and a CSS per family, and either exhausted counts.
import type { ClusterSubnetState, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import type { SubnetStateMode } from './options.ts';
import { FINISHED_PHASES } from '../kube/pod-status.ts';

/** The fields of a pod demand reads; everything optional, the API is untrusted. */
export interface PodLike {
  metadata?: { name?: string; namespace?: string; uid?: string } | null;
  spec?: { nodeName?: string; hostNetwork?: boolean } | null;
  status?: { phase?: string } | null;
}

/** Why a pod object cannot be judged, or undefined when it can. */
export function malformedPodReason(pod: unknown): string | undefined {
  if (pod === null || typeof pod !== 'object') return 'not an object';
  const p = pod as PodLike;
  if (p.metadata === null || typeof p.metadata !== 'object') return 'metadata is missing';
  if (typeof p.metadata.name !== 'string' || p.metadata.name === '')
    return 'metadata.name is missing';
  if (p.spec === null || typeof p.spec !== 'object') return 'spec is missing';
  return undefined;
}

/**
 * True when the pod holds (or will hold) a pod IP from this node's pool. A
 * pod bound to another node does not count (the field selector should have
 * kept it away; this is belt and braces). Malformed pods do not count.
 */
export function podNeedsIp(pod: PodLike, nodeName: string): boolean {
  if (malformedPodReason(pod) !== undefined) return false;
  const spec = pod.spec as NonNullable<PodLike['spec']>;
  if (spec.nodeName !== undefined && spec.nodeName !== nodeName) return false;
  if (spec.hostNetwork === true) return false;
  const phase = pod.status?.phase;
  return !(typeof phase === 'string' && FINISHED_PHASES.has(phase));
}

export function countDemand(pods: readonly PodLike[], nodeName: string): number {
  let n = 0;
  for (const pod of pods) if (podNeedsIp(pod, nodeName)) n += 1;
  return n;
}

/** The subnet name of the node's (first) dynamic network container, if any. */
export function nodeSubnetName(nnc: NodeNetworkConfig | undefined): string | undefined {
  if (nnc === undefined) return undefined;
  const name = dynamicContainers(nnc).find(
    (nc) => typeof nc.subnetName === 'string' && nc.subnetName !== '',
  )?.subnetName;
  return name;
}

/** The field of a ClusterSubnetState that cannot be read as exhausted or not, if any. */
export function malformedCssField(css: unknown): string | undefined {
  const status: unknown = (css as { status?: unknown } | null)?.status;
  if (status === undefined || status === null) return undefined;
  if (typeof status !== 'object' || Array.isArray(status)) return 'status';
  const exhausted = (status as { exhausted?: unknown }).exhausted;
  return exhausted === undefined || typeof exhausted === 'boolean' ? undefined : 'status.exhausted';
}

/**
 * A subnet counts as exhausted only on `status.exhausted: true`; anything
 * else is not. Of several subnets (one per family), any one exhausted counts.
 */
export function subnetExhausted(
  states: readonly ClusterSubnetState[],
  subnetName: string | readonly string[] | undefined,
  mode: SubnetStateMode,
): boolean {
  const names: readonly string[] =
    subnetName === undefined ? [] : typeof subnetName === 'string' ? [subnetName] : subnetName;
  return states.some(
    (css) =>
      css?.status?.exhausted === true &&
      (mode === 'any' || names.includes(css.metadata?.name as string)),
  );
}
