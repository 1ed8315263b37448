// The node's pool by address family, as the metrics, /debug/pool and the
// schedule signal show and judge it: for each family the pool has, its
// subnet (the name its ClusterSubnetState has, and the CIDR), whether that
// subnet is exhausted, its containers' primary IPs, and the store's counts
// of its addresses. Pure: the NNC, the CSS list and the counts in, the
// figures out (docs/design/contracts.md, "Address families").
import type { FamilyCounts, StateCounts } from '../ipstore/types.ts';
import {
  containersByFamily,
  familyName,
  IP_FAMILIES,
  type FamilyName,
  type IpFamily,
} from '../nnc/family.ts';
import {
  dynamicContainers,
  type ClusterSubnetState,
  type NodeNetworkConfig,
} from '../nnc/types.ts';
import { subnetExhausted } from './demand.ts';
import type { SubnetStateMode } from './options.ts';

export interface FamilyPool {
  family: IpFamily;
  name: FamilyName;
  /** The subnet name of the family's first container: its CSS's name. */
  subnet?: string;
  /** The family's first container's `subnetAddressSpace`. */
  subnetAddressSpace?: string;
  /** The CSS of one of the family's subnets says exhausted (any CSS, in mode `any`). */
  exhausted: boolean;
  /** Distinct primary IPs of the family's containers (CNS counts them in total_ips). */
  primaryIPs: number;
  counts: StateCounts;
}

const ZERO: StateCounts = { Available: 0, Assigned: 0, PendingRelease: 0, PendingProgramming: 0 };

/**
 * Every family the NNC's dynamic containers or the store's addresses have,
 * IPv4 first, with its subnet, exhaustion and counts.
 */
export function familyPools(input: {
  nnc: NodeNetworkConfig | undefined;
  css: readonly ClusterSubnetState[];
  mode: SubnetStateMode;
  counts: readonly FamilyCounts[];
}): FamilyPool[] {
  const grouped = containersByFamily(input.nnc ? dynamicContainers(input.nnc) : []);
  const families = IP_FAMILIES.filter(
    (f) => grouped.has(f) || input.counts.some((c) => c.family === f),
  );
  return families.map((family) => {
    const containers = grouped.get(family) ?? [];
    const first = containers[0];
    const names = containers
      .map((nc) => nc.subnetName)
      .filter((n): n is string => typeof n === 'string' && n !== '');
    const primaries = new Set(
      containers
        .map((nc) => nc.primaryIP)
        .filter((ip): ip is string => typeof ip === 'string' && ip !== ''),
    );
    return {
      family,
      name: familyName(family),
      ...(typeof first?.subnetName === 'string' ? { subnet: first.subnetName } : {}),
      ...(typeof first?.subnetAddressSpace === 'string'
        ? { subnetAddressSpace: first.subnetAddressSpace }
        : {}),
      exhausted: subnetExhausted(input.css, names, input.mode),
      primaryIPs: primaries.size,
      counts: { ...(input.counts.find((c) => c.family === family)?.counts ?? ZERO) },
    };
  });
}
