// ARM resource ids as the emulator reads them, written for the emulator (it
// shares no parsing with the product it checks). ARM ids are
// case-insensitive, and a trailing slash names the same resource (Azure REST
// API guidelines, "Resource IDs are case-insensitive").

/** True when two ids name the same resource. */
export function sameId(a: unknown, b: unknown): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  return a.replace(/\/$/, '').toLowerCase() === b.replace(/\/$/, '').toLowerCase();
}

export const machineId = (subscription: string, resourceGroup: string, name: string): string =>
  `/subscriptions/${subscription}/resourceGroups/${resourceGroup}/providers/Microsoft.Compute/virtualMachines/${name}`;

const SUBNET =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/virtualNetworks\/([^/]+)\/subnets\/([^/]+)\/?$/i;

/** A subnet id's resource group, virtual network and name; undefined for any other id. */
export function subnetParts(
  id: string,
): { resourceGroup: string; virtualNetwork: string; name: string } | undefined {
  const m = SUBNET.exec(id);
  return m ? { resourceGroup: m[2]!, virtualNetwork: m[3]!, name: m[4]! } : undefined;
}

/**
 * The resource type an id (or a request path) names, as Azure's operations
 * list spells actions: the provider namespace, then every type segment after
 * it (`…/providers/Microsoft.Network/loadBalancers/lb/inboundNatRules/r` →
 * `Microsoft.Network/loadBalancers/inboundNatRules`); a path that ends on a
 * collection (a list) names the collection's type. Undefined without a provider.
 */
export function resourceTypeOf(id: string): string | undefined {
  const m = /\/providers\/([^/]+)\/(.+?)\/?$/i.exec(id.split('?')[0]!);
  if (!m) return undefined;
  const segments = m[2]!.split('/');
  const types = segments.filter((_, i) => i % 2 === 0);
  return [m[1]!, ...types].join('/');
}
