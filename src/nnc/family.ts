// Address families of an NNC's network containers (docs/design/contracts.md,
// "Address families"): a dual-stack status holds one dynamic container per
// family, its subnet, primary IP, gateway and addresses all of that family.
// What a container's family is, whether its fields agree on it, and the
// figures the pool needs per family. Pure; the text of an address is parsed
// by node:net, never by a pattern of one family.
import { isIP } from 'node:net';
import type { NetworkContainer, NodeNetworkConfig } from './types.ts';
import { assignmentsOf, dynamicContainers } from './types.ts';

export type IpFamily = 4 | 6;
/** The families in the order every answer lists them: IPv4 first. */
export const IP_FAMILIES: readonly IpFamily[] = [4, 6];

export type FamilyName = 'IPv4' | 'IPv6';

export function familyName(family: IpFamily): FamilyName {
  return family === 4 ? 'IPv4' : 'IPv6';
}

/** The family of a textual address, or undefined when it is not one. */
export function addressFamily(text: unknown): IpFamily | undefined {
  if (typeof text !== 'string') return undefined;
  const f = isIP(text);
  return f === 4 || f === 6 ? f : undefined;
}

/** The family of a CIDR's address part (`10.0.0.0/16`, `fd00::/64`), or undefined. */
export function cidrFamily(text: unknown): IpFamily | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  return addressFamily(slash < 0 ? text.trim() : text.slice(0, slash).trim());
}

/** The container fields that name a family, in the order they decide it. */
const FAMILY_FIELDS = ['subnetAddressSpace', 'primaryIP', 'defaultGateway'] as const;

/**
 * A container's family: its subnet's, else its primary IP's, else its
 * gateway's, else its first address's; undefined when none says.
 */
export function containerFamily(nc: NetworkContainer): IpFamily | undefined {
  const fromSubnet = cidrFamily(nc.subnetAddressSpace);
  if (fromSubnet !== undefined) return fromSubnet;
  for (const field of FAMILY_FIELDS.slice(1)) {
    const f = addressFamily(nc[field]);
    if (f !== undefined) return f;
  }
  for (const a of assignmentsOf(nc)) {
    const f = addressFamily(a.ip);
    if (f !== undefined) return f;
  }
  return undefined;
}

/**
 * The first field of the container that is of another family than the
 * container (`ipAssignments[3].ip`), with why; undefined when they agree.
 * Fields that are not addresses at all are not judged here.
 */
export function familyMismatch(
  nc: NetworkContainer,
): { field: string; reason: string } | undefined {
  const family = containerFamily(nc);
  if (family === undefined) return undefined;
  const which = `${familyName(family)} (${decidedBy(nc)})`;
  for (const field of FAMILY_FIELDS) {
    const value = nc[field];
    const f = field === 'subnetAddressSpace' ? cidrFamily(value) : addressFamily(value);
    if (f !== undefined && f !== family)
      return {
        field,
        reason: `${field} ${String(value)} is ${familyName(f)}, the container is ${which}`,
      };
  }
  for (const [i, a] of assignmentsOf(nc).entries()) {
    const f = addressFamily(a.ip);
    if (f !== undefined && f !== family)
      return {
        field: `ipAssignments[${i}].ip`,
        reason: `ipAssignments[${i}].ip ${a.ip} is ${familyName(f)}, the container is ${which}`,
      };
  }
  return undefined;
}

function decidedBy(nc: NetworkContainer): string {
  if (cidrFamily(nc.subnetAddressSpace) !== undefined)
    return `subnetAddressSpace ${String(nc.subnetAddressSpace)}`;
  for (const field of FAMILY_FIELDS.slice(1))
    if (addressFamily(nc[field]) !== undefined) return `${field} ${String(nc[field])}`;
  return 'its first address';
}

/** The dynamic containers by family, IPv4 first; containers of no known family left out. */
export function containersByFamily(
  containers: readonly NetworkContainer[],
): Map<IpFamily, NetworkContainer[]> {
  const out = new Map<IpFamily, NetworkContainer[]>();
  for (const family of IP_FAMILIES) {
    const of = containers.filter((nc) => containerFamily(nc) === family);
    if (of.length > 0) out.set(family, of);
  }
  return out;
}

/**
 * The pool's size as the monitor counts it, in pods: the addresses the
 * status holds in the family that holds most (a pod takes one of each
 * family, and each family's containers hold `requestedIPCount`). The sum of
 * every dynamic container's addresses when they are of one family.
 */
export function poolSize(nnc: NodeNetworkConfig): number {
  const perFamily = new Map<IpFamily | undefined, number>();
  for (const nc of dynamicContainers(nnc)) {
    const f = containerFamily(nc);
    perFamily.set(f, (perFamily.get(f) ?? 0) + (nc.ipAssignments?.length ?? 0));
  }
  return Math.max(0, ...perFamily.values());
}

/** The subnet names of the node's dynamic containers (each family's CSS is named so). */
export function subnetNames(nnc: NodeNetworkConfig | undefined): string[] {
  if (nnc === undefined) return [];
  const names = dynamicContainers(nnc)
    .map((nc) => nc.subnetName)
    .filter((n): n is string => typeof n === 'string' && n !== '');
  return [...new Set(names)];
}
