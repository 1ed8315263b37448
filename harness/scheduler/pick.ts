// The simulated scheduler's decision, pure: which node an unscheduled pod
// goes to. Of the nodes that are Ready, schedulable, match the pod's
// nodeSelector and have room (status.allocatable.pods minus the pods already
// bound there that have not finished), the one with the most free room wins;
// ties go to the first name. When none fits, the reason reads as
// kube-scheduler's: "0/3 nodes are available: 1 node(s) were not ready, ...".
import type { V1Node, V1Pod } from '@kubernetes/client-node';

/** Pods a node takes when it does not say (the kubelet's default --max-pods). */
export const DEFAULT_NODE_PODS = 110;

export interface NodeView {
  name: string;
  ready: boolean;
  unschedulable: boolean;
  labels: Record<string, string>;
  /** status.allocatable.pods. */
  allocatablePods: number;
  /** Non-finished pods bound to the node. */
  used: number;
}

export type Pick = { node: string } | { reason: string };

const FINISHED = new Set(['Succeeded', 'Failed']);

/** Whether a pod still occupies its node (bound, not finished). */
export function occupiesNode(pod: V1Pod): boolean {
  return Boolean(pod.spec?.nodeName) && !FINISHED.has(pod.status?.phase ?? '');
}

/** Whether the pod waits for a node: not bound, not finished, not being deleted. */
export function needsNode(pod: V1Pod): boolean {
  return (
    !pod.spec?.nodeName &&
    !FINISHED.has(pod.status?.phase ?? '') &&
    !pod.metadata?.deletionTimestamp
  );
}

/** Non-finished pods per node name. */
export function podsPerNode(pods: readonly V1Pod[]): Map<string, number> {
  const used = new Map<string, number>();
  for (const p of pods) {
    if (!occupiesNode(p)) continue;
    const node = p.spec?.nodeName as string;
    used.set(node, (used.get(node) ?? 0) + 1);
  }
  return used;
}

/** `status.allocatable.pods` as a number ("110", 110); the default when absent or bad. */
export function allocatablePods(node: V1Node): number {
  const raw = node.status?.allocatable?.pods;
  const n = typeof raw === 'number' ? raw : Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : DEFAULT_NODE_PODS;
}

export function nodeView(node: V1Node, used: number): NodeView {
  const ready = (node.status?.conditions ?? []).some(
    (c) => c.type === 'Ready' && c.status === 'True',
  );
  return {
    name: node.metadata?.name ?? '',
    ready,
    unschedulable: node.spec?.unschedulable === true,
    labels: node.metadata?.labels ?? {},
    allocatablePods: allocatablePods(node),
    used,
  };
}

/** The node for a pod with `nodeSelector`, or why there is none. */
export function pickNode(
  nodes: readonly NodeView[],
  nodeSelector: Record<string, string> = {},
): Pick {
  let best: NodeView | undefined;
  const refused = { notReady: 0, unschedulable: 0, selector: 0, full: 0 };
  for (const n of nodes) {
    if (!n.ready) refused.notReady += 1;
    else if (n.unschedulable) refused.unschedulable += 1;
    else if (!Object.entries(nodeSelector).every(([k, v]) => n.labels[k] === v))
      refused.selector += 1;
    else if (n.used >= n.allocatablePods) refused.full += 1;
    else {
      const free = n.allocatablePods - n.used;
      const bestFree = best ? best.allocatablePods - best.used : -1;
      if (free > bestFree || (free === bestFree && best && n.name < best.name)) best = n;
    }
  }
  if (best) return { node: best.name };
  const parts = [
    refused.notReady && `${refused.notReady} node(s) were not ready`,
    refused.unschedulable && `${refused.unschedulable} node(s) were unschedulable`,
    refused.selector && `${refused.selector} node(s) didn't match Pod's node affinity/selector`,
    refused.full && `${refused.full} node(s) had too many pods`,
  ].filter(Boolean);
  return {
    reason: `0/${nodes.length} nodes are available${parts.length ? `: ${parts.join(', ')}` : ''}.`,
  };
}
