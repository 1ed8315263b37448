// The NNC's network container, built from the NIC as written. Pure.
//   primaryIP          the `pool-monitor-nc-primary` ipConfiguration's address
//   subnetName         the pod subnet's ClusterSubnetState name (cssNameOf its ARM name)
//   subnetAddressSpace its addressPrefix
//   defaultGateway     its first host address
//   nodeIP             the VM's own address (its primary NIC's primary IP)
//   ipAssignments      {name, ip} of every managed secondary with an address
import { createHash } from 'node:crypto';
import type { NetworkInterface } from '@azure/arm-network';
import { gatewayOf, parseCidr } from '../fulfiller/cidr.ts';
import { isManagedSecondary, isNcPrimary } from './nic-plan.ts';
import type { HeldContainer } from '../fulfiller/backend.ts';

export interface PodSubnetFacts {
  id: string;
  /** The ClusterSubnetState's name and the NC's `subnetName`: cssNameOf(armName). */
  name: string;
  /** The subnet's name in ARM. */
  armName: string;
  addressPrefix: string;
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

export function podSubnetFacts(subnet: {
  id?: string;
  name?: string;
  addressPrefix?: string;
  addressPrefixes?: string[];
}): PodSubnetFacts {
  const prefix = subnet.addressPrefix ?? subnet.addressPrefixes?.[0];
  if (!subnet.id || !subnet.name || !prefix) {
    throw new Error(`pod subnet ${subnet.id ?? '?'} has no name or address prefix`);
  }
  parseCidr(prefix);
  return {
    id: subnet.id,
    name: cssNameOf(subnet.name),
    armName: subnet.name,
    addressPrefix: prefix,
  };
}

/** The container the NIC holds; undefined while it has no NC primary address. */
export function heldContainer(
  nic: NetworkInterface,
  subnet: PodSubnetFacts,
  vmNodeIP?: string,
): HeldContainer | undefined {
  const configs = nic.ipConfigurations ?? [];
  const primary = configs.find((c) => isNcPrimary(c, subnet.id));
  if (!primary?.privateIPAddress) return undefined;
  const nodeIP = vmNodeIP ?? configs.find((c) => c.primary === true)?.privateIPAddress;
  return {
    primaryIP: primary.privateIPAddress,
    subnetName: subnet.name,
    subnetAddressSpace: subnet.addressPrefix,
    defaultGateway: gatewayOf(parseCidr(subnet.addressPrefix)),
    type: 'vnet',
    ...(nodeIP ? { nodeIP } : {}),
    ipAssignments: configs
      .filter((c) => isManagedSecondary(c, subnet.id) && c.privateIPAddress)
      .map((c) => ({ name: c.name!, ip: c.privateIPAddress! })),
  };
}
