// What one node needs, read from its NNC alone: how many secondary IPs to
// add, which ones the node gave back (`spec.ipsNotInUse`) and which to keep.
// Only IPs the spec lists are ever removed; a pool above its request simply
// waits for the node to list its surplus. A malformed spec, or a status the
// fulfiller could not have written (its record: see statusProblem), is
// reported naming the field and nothing is done for that node.
import { isIP } from 'node:net';
import { dynamicContainers } from '../nnc/types.ts';
import type { IpAssignment, NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';

export interface NodePlan {
  node: string;
  /** Set when the spec cannot be acted on; then nothing else is meaningful. */
  invalid?: string;
  /** The field `invalid` is about, e.g. `spec.requestedIPCount`. */
  invalidField?: string;
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

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * What makes a status unlike any the fulfiller writes (its record, which it
 * would otherwise carry over): a container list or container that is not an
 * object, an assignment mode other than dynamic or static, more than one
 * dynamic container, or in the dynamic one a primary IP that is missing, not
 * IPv4 or not the backend's, an IP assignment that is not an object, an id
 * that is empty, repeated or not the backend's (`validId`), an address that
 * is not IPv4, not one the backend hands out (`validAddress`: the CIDR
 * backend's pod subnet), repeated, or the container's primary IP.
 * Undefined when none, naming the first field otherwise.
 */
export function statusProblem(
  nnc: NodeNetworkConfig,
  validId: (id: string) => boolean = () => true,
  validAddress: (ip: string) => boolean = () => true,
): { field: string; reason: string } | undefined {
  const status: unknown = nnc.status;
  if (status === undefined || status === null) return undefined;
  if (!isObject(status)) return { field: 'status', reason: 'status is not an object' };
  const list = status.networkContainers;
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list))
    return { field: 'status.networkContainers', reason: 'status.networkContainers is not a list' };
  let dynamic = 0;
  for (const [i, nc] of list.entries()) {
    const at = `status.networkContainers[${i}]`;
    const bad = (field: string, reason: string) => ({
      field: `${at}${field}`,
      reason: `${at}${field} ${reason}`,
    });
    if (!isObject(nc)) return bad('', 'is not an object');
    const mode = nc.assignmentMode ?? 'dynamic';
    if (mode !== 'dynamic' && mode !== 'static')
      return bad('.assignmentMode', `is ${JSON.stringify(mode)}, not dynamic or static`);
    if (mode !== 'dynamic') continue;
    if (++dynamic > 1) return bad('', 'is a second dynamic network container');
    if (nc.id !== undefined && (typeof nc.id !== 'string' || nc.id === ''))
      return bad('.id', 'is not a non-empty string');
    const primary = nc.primaryIP;
    if (primary === undefined || primary === null || primary === '')
      return bad('.primaryIP', 'is missing (a dynamic container always has one)');
    if (typeof primary !== 'string' || isIP(primary) !== 4)
      return bad('.primaryIP', `${JSON.stringify(primary)} is not an IPv4 address`);
    if (!validAddress(primary))
      return bad('.primaryIP', `${primary} is not an address of this backend`);
    const ips = nc.ipAssignments;
    if (ips === undefined || ips === null) continue;
    if (!Array.isArray(ips)) return bad('.ipAssignments', 'is not a list');
    const names = new Set<string>();
    const addresses = new Set<string>([primary]);
    for (const [j, a] of ips.entries()) {
      const where = `.ipAssignments[${j}]`;
      if (!isObject(a)) return bad(where, 'is not an object');
      if (typeof a.name !== 'string' || a.name === '' || !validId(a.name))
        return bad(`${where}.name`, `${JSON.stringify(a.name)} is not an IP id of this backend`);
      if (names.has(a.name)) return bad(`${where}.name`, `${a.name} is listed twice`);
      names.add(a.name);
      if (typeof a.ip !== 'string' || isIP(a.ip) !== 4)
        return bad(`${where}.ip`, `${JSON.stringify(a.ip)} is not an IPv4 address`);
      if (!validAddress(a.ip))
        return bad(`${where}.ip`, `${a.ip} is not an address of this backend`);
      if (addresses.has(a.ip)) return bad(`${where}.ip`, `${a.ip} is listed twice`);
      addresses.add(a.ip);
    }
  }
  return undefined;
}

/** The spec field a spec error is about. */
function specField(message: string): string {
  return message.startsWith('spec.ipsNotInUse') ? 'spec.ipsNotInUse' : 'spec.requestedIPCount';
}

/** The plan for one NNC; `maxIPCount` caps the request; `validId` says which IP ids the backend makes. */
export function planNode(
  nnc: NodeNetworkConfig,
  maxIPCount: number,
  validId?: (id: string) => boolean,
  validAddress?: (ip: string) => boolean,
): NodePlan {
  const node = nnc.metadata.name;
  const empty = { node, requested: 0, keep: [], release: [], allocate: 0 };
  const problem = statusProblem(nnc, validId, validAddress);
  if (problem) return { ...empty, invalid: problem.reason, invalidField: problem.field };
  const container = dynamicContainers(nnc)[0];
  const requestedOrError = readRequested(nnc);
  const notInUse = readNotInUse(nnc);
  if (typeof requestedOrError === 'string')
    return {
      ...empty,
      container,
      invalid: requestedOrError,
      invalidField: specField(requestedOrError),
    };
  if (typeof notInUse === 'string')
    return { ...empty, container, invalid: notInUse, invalidField: specField(notInUse) };
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
