// The NNC's network container, built from the NIC as written. Pure.
//   primaryIP          the `pool-monitor-nc-primary` ipConfiguration's address
//   subnetName         the pod subnet's name
//   subnetAddressSpace its addressPrefix
//   defaultGateway     its first host address
//   nodeIP             the VM's own address (its primary NIC's primary IP)
//   ipAssignments      {name, ip} of every managed secondary with an address
import type { NetworkInterface } from '@azure/arm-network';
import { gatewayOf, parseCidr } from '../fulfiller/cidr.ts';
import { isManagedSecondary, isNcPrimary } from './nic-plan.ts';
import type { HeldContainer } from '../fulfiller/backend.ts';

export interface PodSubnetFacts {
  id: string;
  name: string;
  addressPrefix: string;
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
  return { id: subnet.id, name: subnet.name, addressPrefix: prefix };
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
