// What one node needs, read from its NNC alone: in each address family its
// pool has, how many secondary IPs to add, which ones the node gave back
// (`spec.ipsNotInUse`, ids of either family) and which to keep. A pod needs
// an address of each family, so each family's container holds the request
// (docs/design/contracts.md, "Address families").
// Only IPs the spec lists are ever removed; a pool above its request simply
// waits for the node to list its surplus. A malformed spec, or a status the
// fulfiller could not have written (its record: see statusProblem), is
// reported naming the field and nothing is done for that node.
import { isIP } from 'node:net';
import type { IpFamily } from '../nnc/family.ts';
import { containerFamily } from '../nnc/family.ts';
import { dynamicContainers } from '../nnc/types.ts';
import type { IpAssignment, NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';

/** What one address family's container of the node needs. */
export interface FamilyPlan {
  family: IpFamily;
  /** Its dynamic network container, when it exists. */
  container?: NetworkContainer;
  /** Assignments that stay, in their current order. */
  keep: IpAssignment[];
  /** Assignments listed in `spec.ipsNotInUse`: to be removed. */
  release: IpAssignment[];
  /** How many new secondary IPs to allocate. */
  allocate: number;
  /**
   * The backend serves this family; a container of a family it does not
   * (any more) is carried in the status as it is, never dropped.
   */
  served: boolean;
}

export interface NodePlan {
  node: string;
  /** Set when the spec cannot be acted on; then nothing else is meaningful. */
  invalid?: string;
  /** The field `invalid` is about, e.g. `spec.requestedIPCount`. */
  invalidField?: string;
  /** `spec.requestedIPCount`, capped at the maximum. */
  requested: number;
  /** The families: those the backend serves in its order, then any other the status has. */
  families: FamilyPlan[];
  /** The first family's container (a single-stack node's only one). */
  container?: NetworkContainer;
  /** Over every family: the assignments that stay, and those to be removed. */
  keep: IpAssignment[];
  release: IpAssignment[];
  /** The most new IPs a served family needs. */
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
 * object, an assignment mode other than dynamic or static, two dynamic
 * containers of one address family, or in a dynamic one a primary IP that
 * is missing, not of the container's family or not the backend's, an IP
 * assignment that is not an object, an id that is empty, repeated (in any
 * container) or not the backend's (`validId`), an address that is not of
 * the container's family, not one the backend hands out (`validAddress`:
 * the CIDR backend's pod subnets), repeated, or the container's primary IP.
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
  const families = new Set<IpFamily>();
  const names = new Set<string>();
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
    if (nc.id !== undefined && (typeof nc.id !== 'string' || nc.id === ''))
      return bad('.id', 'is not a non-empty string');
    const primary = nc.primaryIP;
    if (primary === undefined || primary === null || primary === '')
      return bad('.primaryIP', 'is missing (a dynamic container always has one)');
    const family = typeof primary === 'string' ? isIP(primary) : 0;
    if (family !== 4 && family !== 6)
      return bad('.primaryIP', `${JSON.stringify(primary)} is not an IP address`);
    const primaryIp = primary as string;
    const v = `IPv${family}`;
    if (containerFamily(nc as unknown as NetworkContainer) !== family)
      return bad('.primaryIP', `${primaryIp} is not of the container's subnet's family`);
    if (families.has(family)) return bad('', `is a second ${v} dynamic network container`);
    families.add(family);
    if (!validAddress(primaryIp))
      return bad('.primaryIP', `${primaryIp} is not an address of this backend`);
    const ips = nc.ipAssignments;
    if (ips === undefined || ips === null) continue;
    if (!Array.isArray(ips)) return bad('.ipAssignments', 'is not a list');
    const addresses = new Set<string>([primaryIp]);
    for (const [j, a] of ips.entries()) {
      const where = `.ipAssignments[${j}]`;
      if (!isObject(a)) return bad(where, 'is not an object');
      if (typeof a.name !== 'string' || a.name === '' || !validId(a.name))
        return bad(`${where}.name`, `${JSON.stringify(a.name)} is not an IP id of this backend`);
      if (names.has(a.name)) return bad(`${where}.name`, `${a.name} is listed twice`);
      names.add(a.name);
      if (typeof a.ip !== 'string' || isIP(a.ip) !== family)
        return bad(`${where}.ip`, `${JSON.stringify(a.ip)} is not an ${v} address`);
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

/**
 * The plan for one NNC; `maxIPCount` caps the request; `families` are the
 * backend's (IPv4 first); `validId` says which IP ids the backend makes.
 */
export function planNode(
  nnc: NodeNetworkConfig,
  maxIPCount: number,
  families: readonly IpFamily[] = [4],
  validId?: (id: string) => boolean,
  validAddress?: (ip: string) => boolean,
): NodePlan {
  const node = nnc.metadata.name;
  const empty = { node, requested: 0, families: [], keep: [], release: [], allocate: 0 };
  const problem = statusProblem(nnc, validId, validAddress);
  if (problem) return { ...empty, invalid: problem.reason, invalidField: problem.field };
  const containers = dynamicContainers(nnc);
  const requestedOrError = readRequested(nnc);
  const notInUse = readNotInUse(nnc);
  const invalid = typeof requestedOrError === 'string' ? requestedOrError : notInUse;
  if (typeof invalid === 'string')
    return {
      ...empty,
      ...(containers[0] ? { container: containers[0] } : {}),
      invalid,
      invalidField: specField(invalid),
    };
  const requested = Math.min(requestedOrError as number, maxIPCount);
  const others = containers
    .map((nc) => containerFamily(nc)!)
    .filter((f) => !families.includes(f))
    .sort();
  const plans = [...families, ...others].map((family): FamilyPlan => {
    const container = containers.find((nc) => containerFamily(nc) === family);
    const keep: IpAssignment[] = [];
    const release: IpAssignment[] = [];
    for (const a of Array.isArray(container?.ipAssignments) ? container.ipAssignments : []) {
      if ((notInUse as Set<string>).has(a?.name)) release.push(a);
      else keep.push(a);
    }
    const served = families.includes(family);
    return {
      family,
      ...(container ? { container } : {}),
      keep,
      release: served ? release : [],
      allocate: served ? Math.max(0, requested - keep.length) : 0,
      served,
    };
  });
  return {
    node,
    requested,
    families: plans,
    ...(plans[0]?.container ? { container: plans[0].container } : {}),
    keep: plans.flatMap((f) => f.keep),
    release: plans.flatMap((f) => f.release),
    allocate: Math.max(0, ...plans.map((f) => f.allocate)),
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
  return plan.families.every((f) => f.container || !f.served) ? 0 : 1;
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
