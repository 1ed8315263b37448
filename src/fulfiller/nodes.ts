// What the fulfiller reads from a Node: its identity (name, uid, providerID
// for the Azure backend), its InternalIP (the NC's nodeIP), how many pods the
// kubelet will run (`status.allocatable.pods`, the cap of its pool) and its
// labels (for --node-selector). Pure; the Node objects come from the watch.
import { labelSelector } from '../kube/selectors.ts';
import type { KObject } from '../kube/json-object.ts';
import type { NodeRef } from './backend.ts';

export interface NodeInfo {
  name: string;
  uid?: string;
  providerID?: string;
  internalIP?: string;
  /** `status.allocatable.pods` when it is a positive integer. */
  allocatablePods?: number;
  labels: Record<string, string>;
}

/** The subset of a Node object read here; everything optional (untrusted). */
export interface NodeObject {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec?: { providerID?: string };
  status?: {
    addresses?: Array<{ type?: string; address?: string }>;
    allocatable?: Record<string, unknown>;
  };
}

/** Reads a quantity of pods: "110" → 110; anything but a positive integer → undefined. */
export function podCount(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

export function nodeInfo(node: NodeObject): NodeInfo | undefined {
  const name = node?.metadata?.name;
  if (!name) return undefined;
  const info: NodeInfo = { name, labels: { ...(node.metadata?.labels ?? {}) } };
  if (node.metadata?.uid) info.uid = node.metadata.uid;
  if (node.spec?.providerID) info.providerID = node.spec.providerID;
  const ip = node.status?.addresses?.find((a) => a?.type === 'InternalIP')?.address;
  if (ip) info.internalIP = ip;
  const pods = podCount(node.status?.allocatable?.pods);
  if (pods !== undefined) info.allocatablePods = pods;
  return info;
}

/** The node's pool cap: `--max`, lowered to the pods its kubelet will run when it says. */
export function maxIpCountFor(max: number, node: NodeInfo | undefined): number {
  const pods = node?.allocatablePods;
  return pods !== undefined ? Math.min(max, pods) : max;
}

export function nodeRef(name: string, node: NodeInfo | undefined): NodeRef {
  return node?.providerID ? { name, providerID: node.providerID } : { name };
}

/**
 * A predicate for `--node-selector` (Kubernetes label selector syntax:
 * `k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma = and).
 * Throws a one-line error on bad syntax; empty selects every node.
 */
export function nodeSelector(selector: string | undefined): (node: NodeInfo) => boolean {
  let match: (obj: KObject) => boolean;
  try {
    match = labelSelector(selector ?? '');
  } catch (err) {
    throw new Error(`invalid node selector "${selector}": ${(err as Error).message}`);
  }
  return (node) => match({ metadata: { name: node.name, labels: node.labels } } as KObject);
}
