// What one node needs, read from its NNC alone: how many secondary IPs to
// add, which ones the node gave back (`spec.ipsNotInUse`) and which to keep.
// Only IPs the spec lists are ever removed; a pool above its request simply
// waits for the node to list its surplus. A malformed spec is reported and
// nothing is done for that node.
import { dynamicContainers } from '../nnc/types.ts';
import type { IpAssignment, NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';

export interface NodePlan {
  node: string;
  /** Set when the spec cannot be acted on; then nothing else is meaningful. */
  invalid?: string;
  /** `spec.requestedIPCount`, capped at the maximum. */
  requested: number;
  /** The dynamic network container the fulfiller manages, when it exists. */
  container?: NetworkContainer;
  /** Assignments that stay, in their current order. */
  keep: IpAssignment[];
  /** Assignments listed in `spec.ipsNotInUse`: to be removed. */
  release: IpAssignment[];
  /** How many new secondary IPs to allocate. */
  allocate: number;
}

/** Reads `spec.requestedIPCount`: absent means 0; anything but a non-negative integer is an error. */
export function readRequested(nnc: NodeNetworkConfig): number | string {
  const raw = (nnc.spec as Record<string, unknown> | undefined)?.requestedIPCount;
  if (raw === undefined || raw === null) return 0;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0) {
    return `spec.requestedIPCount must be a non-negative integer, got ${JSON.stringify(raw)}`;
  }
  return raw;
}

/** Reads `spec.ipsNotInUse`: absent means none; anything but strings is an error. */
export function readNotInUse(nnc: NodeNetworkConfig): Set<string> | string {
  const raw = (nnc.spec as Record<string, unknown> | undefined)?.ipsNotInUse;
  if (raw === undefined || raw === null) return new Set();
  if (!Array.isArray(raw) || raw.some((id) => typeof id !== 'string')) {
    return 'spec.ipsNotInUse must be a list of strings';
  }
  return new Set(raw as string[]);
}

/** The plan for one NNC; `maxIPCount` caps the request. */
export function planNode(nnc: NodeNetworkConfig, maxIPCount: number): NodePlan {
  const node = nnc.metadata.name;
  const container = dynamicContainers(nnc)[0];
  const requestedOrError = readRequested(nnc);
  const notInUse = readNotInUse(nnc);
  const empty = { node, requested: 0, keep: [], release: [], allocate: 0, container };
  if (typeof requestedOrError === 'string') return { ...empty, invalid: requestedOrError };
  if (typeof notInUse === 'string') return { ...empty, invalid: notInUse };
  const requested = Math.min(requestedOrError, maxIPCount);
  const assignments = Array.isArray(container?.ipAssignments) ? container.ipAssignments : [];
  const keep: IpAssignment[] = [];
  const release: IpAssignment[] = [];
  for (const a of assignments) {
    if (notInUse.has(a?.name)) release.push(a);
    else keep.push(a);
  }
  return {
    node,
    requested,
    container,
    keep,
    release,
    allocate: Math.max(0, requested - keep.length),
  };
}

/**
 * Signed need of a plan: IPs to add (> 0), or minus the IPs to remove
 * (< 0) when nothing is missing, or 0. A node without a container yet
 * counts as needing one address so it is set up before idle nodes.
 */
export function neededAddresses(plan: NodePlan): number {
  if (plan.invalid) return 0;
  if (plan.allocate > 0) return plan.allocate;
  if (plan.release.length > 0) return -plan.release.length;
  return plan.container ? 0 : 1;
}

/**
 * Queue priority from the need, as the Cilium operator orders its nodes:
 * the largest deficit first, then the largest surplus to release, then the
 * rest. Higher runs first.
 */
export function priorityOf(needed: number): number {
  if (needed > 0) return 2_000_000_000 + needed;
  if (needed < 0) return 1_000_000_000 - needed;
  return 0;
}

/** Node names in serving order (ties by name, for determinism). */
export function orderByNeed(needs: ReadonlyArray<{ node: string; needed: number }>): string[] {
  return [...needs]
    .sort(
      (a, b) =>
        priorityOf(b.needed) - priorityOf(a.needed) ||
        (a.node < b.node ? -1 : a.node > b.node ? 1 : 0),
    )
    .map((n) => n.node);
}
