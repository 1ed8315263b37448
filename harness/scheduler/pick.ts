// The simulated scheduler's decision, pure: which node an unscheduled pod
// goes to. Of the nodes that are Ready, schedulable, match the pod's
// nodeSelector, carry no NoSchedule or NoExecute taint the pod does not
// tolerate (kube-scheduler's TaintToleration filter,
// pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go, with
// the toleration rules of k8s.io/api/core/v1 toleration.go ToleratesTaint)
// and have room (status.allocatable.pods minus the pods already bound there
// that have not finished), the one with the most free room wins; ties go to
// the first name. When none fits, the reason reads as kube-scheduler's:
// "0/3 nodes are available: 1 node(s) were not ready, ...".
import type { V1Node, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';

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
  /** spec.taints. */
  taints: V1Taint[];
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
    taints: node.spec?.taints ?? [],
  };
}

/**
 * Whether the toleration tolerates the taint, as ToleratesTaint does: the
 * effect matches (an empty one matches all), the key matches (an empty key
 * with Exists matches every key), and Exists ignores the value while Equal
 * (the default) needs the same value.
 */
export function toleratesTaint(t: V1Toleration, taint: V1Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key !== taint.key && !(t.key === undefined || t.key === '')) return false;
  if ((t.key === undefined || t.key === '') && t.operator !== 'Exists') return false;
  const op = t.operator ?? 'Equal';
  if (op === 'Exists') return true;
  return op === 'Equal' && (t.value ?? '') === (taint.value ?? '');
}

/** The first NoSchedule/NoExecute taint no toleration tolerates (the filter's), or undefined. */
export function untoleratedTaint(
  taints: readonly V1Taint[],
  tolerations: readonly V1Toleration[],
): V1Taint | undefined {
  return taints.find(
    (taint) =>
      (taint.effect === 'NoSchedule' || taint.effect === 'NoExecute') &&
      !tolerations.some((t) => toleratesTaint(t, taint)),
  );
}

/** The node for a pod with `nodeSelector`, or why there is none. */
export function pickNode(
  nodes: readonly NodeView[],
  nodeSelector: Record<string, string> = {},
  tolerations: readonly V1Toleration[] = [],
): Pick {
  let best: NodeView | undefined;
  const refused = { notReady: 0, unschedulable: 0, selector: 0, full: 0 };
  const tainted = new Map<string, number>();
  for (const n of nodes) {
    const taint = untoleratedTaint(n.taints ?? [], tolerations);
    if (!n.ready) refused.notReady += 1;
    else if (n.unschedulable) refused.unschedulable += 1;
    else if (!Object.entries(nodeSelector).every(([k, v]) => n.labels[k] === v))
      refused.selector += 1;
    else if (taint) {
      const what = `{${taint.key}: ${taint.value ?? ''}}`;
      tainted.set(what, (tainted.get(what) ?? 0) + 1);
    } else if (n.used >= n.allocatablePods) refused.full += 1;
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
    ...[...tainted].map(([what, n]) => `${n} node(s) had untolerated taint ${what}`),
    refused.full && `${refused.full} node(s) had too many pods`,
  ].filter(Boolean);
  return {
    reason: `0/${nodes.length} nodes are available${parts.length ? `: ${parts.join(', ')}` : ''}.`,
  };
}
