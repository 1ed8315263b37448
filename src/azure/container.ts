// The NNC's network container of one address family, built from the NIC as
// written. Pure.
//   primaryIP          the family's NC primary ipConfiguration's address
//                      (`pool-monitor-nc-primary`, `-ipv6` for IPv6: ip-family.ts)
//   subnetName         the family's ClusterSubnetState name (cssNameFor)
//   subnetAddressSpace the pod subnet's prefix of that family
//   defaultGateway     its first host address
//   nodeIP             the VM's own address (its primary NIC's primary IP)
//   ipAssignments      {name, ip} of every managed secondary of the family with an address
import { createHash } from 'node:crypto';
import type { NetworkInterface } from '@azure/arm-network';
import type { IpFamily } from '../nnc/family.ts';
import { gatewayOf, parseCidr } from '../fulfiller/cidr.ts';
import { gatewayOf6, parseCidr6 } from '../fulfiller/cidr6.ts';
import { IPV6_CSS_SUFFIX, prefixesByFamily } from './ip-family.ts';
import { isManagedSecondary, isNcPrimary } from './nic-plan.ts';
import type { HeldContainer } from '../fulfiller/backend.ts';
import { NodeSetupError } from '../fulfiller/backend.ts';

export interface PodSubnetFacts {
  id: string;
  /** The ClusterSubnetState's name and the NC's `subnetName`: cssNameFor(armName, family). */
  name: string;
  /** The subnet's name in ARM. */
  armName: string;
  /** The subnet's prefix of this family. */
  addressPrefix: string;
  /** Which family these facts are of (IPv4 when absent). */
  family?: IpFamily;
  /** Every family the subnet has a prefix of, IPv4 first (IPv4 alone when absent). */
  families?: IpFamily[];
}

/** A DNS-1123 subdomain, what a ClusterSubnetState may be named. */
const DNS_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The ClusterSubnetState name of an ARM subnet name. ARM allows 1 to 80
 * letters, digits, `_`, `.` and `-` (starting with a letter or digit, ending
 * with one or `_`); Kubernetes wants a DNS-1123 subdomain. A name that is
 * one is kept as it is; any other is lower-cased, `_` (and, where the dots do
 * not make labels, `.`) made `-`, leading and trailing `-` dropped, and the
 * first 8 hex digits of the ARM name's SHA-256 appended, so two ARM names
 * that map alike (`Pods`, `pods_`) stay two ClusterSubnetStates. Stable: the
 * same ARM name always gives the same name.
 */
export function cssNameOf(armName: string): string {
  if (DNS_1123_SUBDOMAIN.test(armName)) return armName;
  let name = armName.toLowerCase().replace(/[^a-z0-9.-]/g, '-');
  if (!DNS_1123_SUBDOMAIN.test(name.replace(/^-+|-+$/g, ''))) name = name.replace(/\./g, '-');
  name = name.replace(/^-+|-+$/g, '');
  const hash = createHash('sha256').update(armName).digest('hex').slice(0, 8);
  return name === '' ? `subnet-${hash}` : `${name}-${hash}`;
}

/**
 * The ClusterSubnetState name of an ARM subnet's family: its IPv4 prefix's is
 * cssNameOf(armName), its IPv6 prefix's that plus `-ipv6` (one CSS per
 * subnet prefix, docs/design/fulfiller.md, "Dual-stack on Azure").
 */
export function cssNameFor(armName: string, family: IpFamily): string {
  const name = cssNameOf(armName);
  return family === 6 ? `${name}${IPV6_CSS_SUFFIX}` : name;
}

/**
 * What the backend needs of a pod subnet's family. A subnet without a prefix
 * of that family is a NodeSetupError (`NoIPv6Prefix`, `NoIPv4Prefix`).
 */
export function podSubnetFacts(
  subnet: {
    id?: string;
    name?: string;
    addressPrefix?: string;
    addressPrefixes?: string[];
  },
  family: IpFamily = 4,
): PodSubnetFacts {
  const prefixes = prefixesByFamily(subnet);
  if (!subnet.id || !subnet.name || prefixes.size === 0) {
    throw new Error(`pod subnet ${subnet.id ?? '?'} has no name or address prefix`);
  }
  const prefix = prefixes.get(family);
  if (prefix === undefined) {
    throw new NodeSetupError(
      `NoIPv${family}Prefix`,
      `pod subnet ${subnet.name} has no IPv${family} address prefix (it has ${[...prefixes.values()].join(', ')})`,
    );
  }
  if (family === 6) parseCidr6(prefix);
  else parseCidr(prefix);
  return {
    id: subnet.id,
    name: cssNameFor(subnet.name, family),
    armName: subnet.name,
    addressPrefix: prefix,
    family,
    families: [...prefixes.keys()],
  };
}

/** A prefix's default gateway (its first host address), either family. */
export function gatewayOfPrefix(prefix: string, family: IpFamily): string {
  return family === 6 ? gatewayOf6(parseCidr6(prefix)) : gatewayOf(parseCidr(prefix));
}

/** The container of the facts' family the NIC holds; undefined while it has no NC primary address. */
export function heldContainer(
  nic: NetworkInterface,
  subnet: PodSubnetFacts,
  vmNodeIP?: string,
): HeldContainer | undefined {
  const family = subnet.family ?? 4;
  const configs = nic.ipConfigurations ?? [];
  const primary = configs.find((c) => isNcPrimary(c, subnet.id, family));
  if (!primary?.privateIPAddress) return undefined;
  const nodeIP = vmNodeIP ?? configs.find((c) => c.primary === true)?.privateIPAddress;
  return {
    primaryIP: primary.privateIPAddress,
    subnetName: subnet.name,
    subnetAddressSpace: subnet.addressPrefix,
    defaultGateway: gatewayOfPrefix(subnet.addressPrefix, family),
    type: 'vnet',
    ...(nodeIP ? { nodeIP } : {}),
    ipAssignments: configs
      .filter((c) => isManagedSecondary(c, subnet.id, family) && c.privateIPAddress)
      .map((c) => ({ name: c.name!, ip: c.privateIPAddress! })),
  };
}
