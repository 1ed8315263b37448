// A NIC as the emulator keeps it: the body ARM returns for a NIC a VM was
// made with (one primary Dynamic ipConfiguration), its etag, and the keys
// NICs are filed under (resource group and name, case-insensitive).
import { randomUUID } from 'node:crypto';
import type { ArmObject } from './arm-object.ts';

export interface VmOptions {
  resourceGroup: string;
  name: string;
  /** Subnet id of the NIC's primary ipConfiguration (the node subnet). */
  subnetId: string;
  nicName?: string;
  /** Extra NIC properties (networkSecurityGroup, dnsSettings, enableAcceleratedNetworking...). */
  nicProperties?: Record<string, unknown>;
  /** Extra properties of the primary ipConfiguration (loadBalancerBackendAddressPools...). */
  primaryConfigProperties?: Record<string, unknown>;
  tags?: Record<string, string>;
  /** Pod NIC layout: a second NIC whose primary ipConfiguration is in this subnet. */
  podNicSubnetId?: string;
  /** Application security groups of the NICs' primary ipConfigurations. */
  asgIds?: string[];
}

export interface AddedVm {
  vmId: string;
  providerID: string;
  /** The NIC that takes pod IPs: the pod NIC when there is one, else the primary NIC. */
  nicName: string;
  nicId: string;
  /** The VM's primary NIC. */
  primaryNicName: string;
}

export const newEtag = (): string => `W/"${randomUUID()}"`;

/** A standalone NIC's key: its resource group and name. */
export const nicKey = (resourceGroup: string, name: string): string =>
  `${resourceGroup.toLowerCase()}/${name.toLowerCase()}`;

/** `/subscriptions/S/resourceGroups/G` of an ARM resource id. */
export const resourceGroupIdOf = (id: string): string =>
  /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+/i.exec(id)?.[0] ?? id;

/** A new NIC of `vm` with one primary Dynamic ipConfiguration holding `ip` in `subnetId`. */
export function newNic(n: {
  nicId: string;
  nicName: string;
  location: string;
  options: Omit<VmOptions, 'subnetId'>;
  subnetId: string;
  ip: string;
  primary: boolean;
  vm: string;
}): ArmObject {
  const { nicId, options } = n;
  const etag = newEtag();
  const asgs = (options.asgIds ?? []).map((asg) => ({ id: asg }));
  return {
    name: n.nicName,
    id: nicId,
    etag,
    type: 'Microsoft.Network/networkInterfaces',
    location: n.location,
    ...(options.tags ? { tags: options.tags } : {}),
    properties: {
      provisioningState: 'Succeeded',
      resourceGuid: randomUUID(),
      macAddress: randomUUID().replace(/-/g, '').slice(0, 12).toUpperCase(),
      primary: n.primary,
      virtualMachine: { id: n.vm },
      enableIPForwarding: false,
      ...options.nicProperties,
      ipConfigurations: [
        {
          name: 'ipconfig1',
          id: `${nicId}/ipConfigurations/ipconfig1`,
          etag,
          type: 'Microsoft.Network/networkInterfaces/ipConfigurations',
          properties: {
            provisioningState: 'Succeeded',
            privateIPAddress: n.ip,
            privateIPAllocationMethod: 'Dynamic',
            privateIPAddressVersion: 'IPv4',
            subnet: { id: n.subnetId },
            primary: true,
            ...(asgs.length ? { applicationSecurityGroups: asgs } : {}),
            ...options.primaryConfigProperties,
          },
        },
      ],
    },
  };
}

export function configsOf(nic: ArmObject | undefined): ArmObject[] {
  return (nic?.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];
}

export function setProvisioningState(nic: ArmObject, state: string): void {
  const props = nic.properties ?? {};
  props.provisioningState = state;
  for (const c of (props.ipConfigurations as ArmObject[] | undefined) ?? []) {
    if (c.properties) c.properties.provisioningState = state;
  }
}
