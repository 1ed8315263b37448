// Azure Resource Manager ids: parsing and comparison. ARM ids are
// case-insensitive (`resourceGroups` and `resourcegroups` name the same
// thing), so every comparison here ignores case.

export interface SubnetRef {
  subscriptionId: string;
  resourceGroup: string;
  virtualNetwork: string;
  subnet: string;
  /** The id as given. */
  id: string;
}

export interface VmRef {
  subscriptionId: string;
  resourceGroup: string;
  /** The VM's name; for a Uniform scale-set instance, `SS_ID` as Azure names it. */
  name: string;
  /**
   * `/subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/VM`,
   * or `.../virtualMachineScaleSets/SS/virtualMachines/ID` (a Uniform scale-set instance).
   */
  id: string;
  /** A Uniform scale-set instance: its scale set and instance id. */
  scaleSet?: { name: string; instanceId: string };
}

const SEGMENT = '([^/]+)';
const SUBNET_ID = new RegExp(
  `^/subscriptions/${SEGMENT}/resourceGroups/${SEGMENT}/providers/Microsoft\\.Network/virtualNetworks/${SEGMENT}/subnets/${SEGMENT}/?$`,
  'i',
);
const VM_ID = new RegExp(
  `^/subscriptions/${SEGMENT}/resourceGroups/${SEGMENT}/providers/Microsoft\\.Compute/virtualMachines/${SEGMENT}/?$`,
  'i',
);
const VMSS_VM_ID = new RegExp(
  `^/subscriptions/${SEGMENT}/resourceGroups/${SEGMENT}/providers/Microsoft\\.Compute/virtualMachineScaleSets/${SEGMENT}/virtualMachines/${SEGMENT}/?$`,
  'i',
);
const VMSS_NIC_ID = new RegExp(
  `^/subscriptions/${SEGMENT}/resourceGroups/${SEGMENT}/providers/Microsoft\\.Compute/virtualMachineScaleSets/${SEGMENT}/virtualMachines/${SEGMENT}/networkInterfaces/${SEGMENT}/?$`,
  'i',
);

/** A Uniform scale-set instance's NIC, from its id; undefined for any other id. */
export function parseScaleSetNicId(
  id: string | undefined,
): { resourceGroup: string; scaleSet: string; instanceId: string; nic: string } | undefined {
  const m = VMSS_NIC_ID.exec(id ?? '');
  return m ? { resourceGroup: m[2]!, scaleSet: m[3]!, instanceId: m[4]!, nic: m[5]! } : undefined;
}

/** Parses a full subnet id; throws a one-line error naming the expected shape. */
export function parseSubnetId(id: string): SubnetRef {
  const m = SUBNET_ID.exec(id);
  if (!m) {
    throw new Error(
      `invalid subnet id "${id}": expected /subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/N`,
    );
  }
  return {
    subscriptionId: m[1]!,
    resourceGroup: m[2]!,
    virtualNetwork: m[3]!,
    subnet: m[4]!,
    id: id.replace(/\/$/, ''),
  };
}

/** The id of a virtual machine. */
export function vmId(subscriptionId: string, resourceGroup: string, name: string): string {
  return `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Compute/virtualMachines/${name}`;
}

/**
 * The VM a Node's `spec.providerID` names:
 * `azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/VM`
 * (a VM, or a Flexible scale set's instance: those are standalone VMs), or
 * `azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/SS/virtualMachines/ID`
 * (a Uniform scale set's instance). Throws a one-line error for anything else.
 */
export function parseProviderId(providerID: string): VmRef {
  const prefix = 'azure://';
  if (!providerID.toLowerCase().startsWith(prefix)) {
    throw new Error(`providerID "${providerID}" is not an Azure one (azure:///subscriptions/...)`);
  }
  const path = providerID.slice(prefix.length);
  const ss = VMSS_VM_ID.exec(path);
  if (ss) {
    return {
      subscriptionId: ss[1]!,
      resourceGroup: ss[2]!,
      name: `${ss[3]!}_${ss[4]!}`,
      id: path.replace(/\/$/, ''),
      scaleSet: { name: ss[3]!, instanceId: ss[4]! },
    };
  }
  const m = VM_ID.exec(path);
  if (!m) {
    throw new Error(
      `providerID "${providerID}" does not name a virtual machine (.../providers/Microsoft.Compute/virtualMachines/VM or .../virtualMachineScaleSets/SS/virtualMachines/ID)`,
    );
  }
  return {
    subscriptionId: m[1]!,
    resourceGroup: m[2]!,
    name: m[3]!,
    id: path.replace(/\/$/, ''),
  };
}

/** True when two ARM ids name the same resource (case and a trailing slash ignored). */
export function sameArmId(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return a.replace(/\/$/, '').toLowerCase() === b.replace(/\/$/, '').toLowerCase();
}
