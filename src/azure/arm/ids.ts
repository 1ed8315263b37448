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
  name: string;
  /** `/subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/VM`. */
  id: string;
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
 * `azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/VM`.
 * Throws a one-line error for anything else (VM scale set instances included:
 * their NICs do not live in the resource group's NIC list).
 */
export function parseProviderId(providerID: string): VmRef {
  const prefix = 'azure://';
  if (!providerID.toLowerCase().startsWith(prefix)) {
    throw new Error(`providerID "${providerID}" is not an Azure one (azure:///subscriptions/...)`);
  }
  const path = providerID.slice(prefix.length);
  const m = VM_ID.exec(path);
  if (!m) {
    throw new Error(
      `providerID "${providerID}" does not name a virtual machine (.../providers/Microsoft.Compute/virtualMachines/VM)`,
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
