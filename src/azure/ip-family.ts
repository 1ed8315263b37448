// The address families of a pod subnet and of a NIC's ipConfigurations
// (docs/design/fulfiller.md, "Dual-stack on Azure"). Pure.
//
// A dual-stack ARM subnet carries an IPv4 and an IPv6 prefix (its
// `addressPrefixes`; a single-prefix subnet says `addressPrefix`). An
// ipConfiguration's family is its `privateIPAddressVersion` (IPv4 when
// absent, the REST API's default). Each family of the pod subnet is its own
// ClusterSubnetState: the IPv4 one named after the subnet (cssNameOf), the
// IPv6 one that name plus `-ipv6`; each family's container on a node has its
// own NC primary ipConfiguration (IPv4: `pool-monitor-nc-primary`, IPv6:
// `pool-monitor-nc-primary-ipv6`).
import type { NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import type { IpFamily } from '../nnc/family.ts';
import { addressFamily, cidrFamily } from '../nnc/family.ts';

export const NC_PRIMARY_NAME = 'pool-monitor-nc-primary';
export const NC_PRIMARY_NAME_IPV6 = 'pool-monitor-nc-primary-ipv6';

/** The name of the NC primary ipConfiguration of a family's container. */
export function ncPrimaryName(family: IpFamily): string {
  return family === 6 ? NC_PRIMARY_NAME_IPV6 : NC_PRIMARY_NAME;
}

/** Whether a name is one of the NC primaries' (either family). */
export function isNcPrimaryName(name: string | undefined): boolean {
  return name === NC_PRIMARY_NAME || name === NC_PRIMARY_NAME_IPV6;
}

/** The suffix of an IPv6 pod subnet's ClusterSubnetState name. */
export const IPV6_CSS_SUFFIX = '-ipv6';

/** An ipConfiguration's family: its privateIPAddressVersion, else its address's, else IPv4. */
export function configFamily(config: NetworkInterfaceIPConfiguration): IpFamily {
  if (config.privateIPAddressVersion === 'IPv6') return 6;
  if (config.privateIPAddressVersion === 'IPv4') return 4;
  return addressFamily(config.privateIPAddress) ?? 4;
}

/** The subnet's prefix of each family (IPv4 first), from addressPrefix and addressPrefixes. */
export function prefixesByFamily(subnet: {
  addressPrefix?: string;
  addressPrefixes?: string[];
}): Map<IpFamily, string> {
  const out = new Map<IpFamily, string>();
  for (const prefix of [subnet.addressPrefix, ...(subnet.addressPrefixes ?? [])]) {
    const family = cidrFamily(prefix);
    if (family !== undefined && !out.has(family)) out.set(family, prefix!);
  }
  return new Map([...out].sort(([a], [b]) => a - b));
}
