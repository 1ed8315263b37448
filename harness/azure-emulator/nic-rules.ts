// The rules ARM keeps on the ipConfigurations of one NIC, apart from address
// assignment (nic-put.ts). Each throws the ArmHttpError ARM answers; the
// sources are listed in this folder's README (conformance table).
//   one subnet        every ipConfiguration of a NIC in the same subnet
//   same ASGs         every ipConfiguration references the same set of ASGs
//   primary kept      the primary ipConfiguration is never deleted nor renamed
//   IPv6              an IPv6 ipConfiguration is never the primary, needs a
//                     subnet with an IPv6 prefix, and a NIC holds as many as
//                     its IPv6 regime allows (ipv6PerNic)
import type { ArmHttpError } from './errors.ts';
import { badRequest } from './errors.ts';
import type { ArmObject } from './arm-object.ts';

function props(c: ArmObject): Record<string, unknown> {
  const p = c.properties;
  return typeof p === 'object' && p !== null ? p : {};
}

function subnetOf(c: ArmObject): string {
  const s = props(c).subnet as { id?: unknown } | undefined;
  return typeof s?.id === 'string' ? s.id.replace(/\/$/, '').toLowerCase() : '';
}

/** The ASG ids an ipConfiguration references, sorted, lower case. */
export function asgSet(c: ArmObject): string[] {
  const list = props(c).applicationSecurityGroups;
  if (!Array.isArray(list)) return [];
  return list
    .map((a) => (a as { id?: unknown } | null)?.id)
    .filter((id): id is string => typeof id === 'string')
    .map((id) => id.replace(/\/$/, '').toLowerCase())
    .sort();
}

/** "IPConfigurations on a Nic cannot belong to different subnets." */
export function checkOneSubnet(configs: ArmObject[]): void {
  const subnets = new Set(configs.map(subnetOf));
  if (subnets.size > 1) {
    throw badRequest(
      'IpConfigurationsOnNicCannotBelongToDifferentSubnets',
      'IPConfigurations on a Nic cannot belong to different subnets.',
    );
  }
}

/** AllIpConfigurationsOnANicMustBelongToTheSameApplicationSecurityGroups. */
export function checkSameAsgs(configs: ArmObject[], nicId: string): void {
  const first = configs[0];
  if (!first) return;
  const want = asgSet(first).join(',');
  for (const c of configs.slice(1)) {
    if (asgSet(c).join(',') === want) continue;
    throw badRequest(
      'AllIpConfigurationsOnANicMustBelongToTheSameApplicationSecurityGroups',
      `All IPConfigurations on a Network Interface should reference the same set of Application Security Groups. ` +
        `IPConfiguration ${nicId}/ipConfigurations/${String(first.name)} references ASG(s) ${asgSet(first).join(',')}, ` +
        `wheras IPConfiguration ${nicId}/ipConfigurations/${String(c.name)} references ASG(s) ${asgSet(c).join(',')}.`,
    );
  }
}

/** IpConfigDeleteNotSupported: the stored primary must still be there, by name, still primary. */
export function checkPrimaryKept(stored: ArmObject[], wanted: ArmObject[]): void {
  const primary = stored.find((c) => props(c).primary === true);
  if (!primary) return;
  const name = String(primary.name).toLowerCase();
  const still = wanted.find((c) => String(c.name).toLowerCase() === name);
  if (still && props(still).primary === true) return;
  throw badRequest(
    'IpConfigDeleteNotSupported',
    `IP Configuration ${String(primary.name)} cannot be deleted. Deletion and renaming of primary IP Configuration is not supported`,
  );
}

/** Private IP addresses per virtual machine (256 by default). */
export function checkPerVm(total: number, cap: number, vm: string): void {
  if (total <= cap) return;
  throw badRequest(
    'PrivateIPAddressesPerVirtualMachineLimitReached',
    `Virtual machine ${vm} would have ${total} private IP addresses; the limit is ${cap}.`,
  );
}

/** Private IP addresses per virtual network (65,536 by default). */
export function vnetFull(vnet: string, cap: number): ArmHttpError {
  return badRequest(
    'PrivateIPAddressesPerVirtualNetworkLimitReached',
    `Virtual network ${vnet} has reached its limit of ${cap} private IP addresses.`,
  );
}

/** An ipConfiguration's address family: `privateIPAddressVersion`, IPv4 when absent (the REST API's default). */
export function versionOf(c: ArmObject): 'IPv4' | 'IPv6' {
  return props(c).privateIPAddressVersion === 'IPv6' ? 'IPv6' : 'IPv4';
}

/**
 * How many IPv6 ipConfigurations ARM lets one NIC hold:
 * - `one`: what Azure documents ("Configure IP addresses for an Azure
 *   network interface": "Each network interface can have one IPv6 private
 *   address", and "If the address is IPv6, the network interface can only
 *   have one secondary IP configuration"; Azure/AKS#2732, 2022: "you cannot
 *   add more than one private IPv6 address to a NIC in Azure, a limitation at
 *   the networking layer");
 * - `many`: what Azure/AKS#5722 describes for NICs serving pods (2026: "A NIC
 *   can have: 1 primary IPv6 address, up to 254 secondary IPv6 addresses"),
 *   within the NIC's 256.
 */
export type Ipv6PerNic = 'one' | 'many';

/** The most IPv6 ipConfigurations a NIC holds under `many`: 1 + 254. */
export const MAX_IPV6_PER_NIC = 255;

/**
 * `privateIPAddressVersion` is IPv4 or IPv6 (the REST API's IPVersion enum);
 * anything else is refused (the code and message are the emulator's).
 */
export function checkVersion(c: ArmObject, name: string): void {
  const v = props(c).privateIPAddressVersion;
  if (v === undefined || v === 'IPv4' || v === 'IPv6') return;
  throw badRequest(
    'InvalidRequestFormat',
    `ipConfiguration ${name}: privateIPAddressVersion ${JSON.stringify(v)} is not IPv4 or IPv6`,
  );
}

/**
 * The primary ipConfiguration is IPv4: "You can't assign a private IPv6
 * address to a primary IP configuration" ("Configure IP addresses for an
 * Azure network interface"), "each NIC must include at least one IPv4 IP
 * configuration" ("What is IPv6 for Azure Virtual Network?", limitations),
 * and cloud-provider-azure relies on it ("IPv4 IP config is always primary",
 * kubernetes-sigs/cloud-provider-azure#3715). ARM's code and message are
 * not public: these are the emulator's.
 */
export function checkPrimaryIsIPv4(configs: ArmObject[], nicId: string): void {
  const v6 = configs.find((c) => props(c).primary === true && versionOf(c) === 'IPv6');
  if (!v6) return;
  throw badRequest(
    'IPv6IpConfigurationCannotBePrimary',
    `IP configuration ${nicId}/ipConfigurations/${String(v6.name)} is IPv6: the primary IP configuration of a network interface must be IPv4.`,
  );
}

/**
 * An IPv6 ipConfiguration's subnet has an IPv6 prefix (Azure docs, "Add a
 * dual-stack network to an existing virtual machine": the subnet gets its
 * IPv6 prefix before the NIC its IPv6 IP configuration). ARM's code and
 * message are not public: these are the emulator's.
 */
export function noIPv6Prefix(configId: string, subnetId: string): ArmHttpError {
  return badRequest(
    'SubnetHasNoIPv6AddressPrefix',
    `IP configuration ${configId} is IPv6, but subnet ${subnetId} has no IPv6 address prefix.`,
  );
}

/**
 * The NIC's IPv6 ipConfigurations within its regime (Ipv6PerNic). ARM's
 * code and message are not public: these are the emulator's.
 */
export function checkIPv6PerNic(configs: ArmObject[], regime: Ipv6PerNic, nicId: string): void {
  const v6 = configs.filter((c) => versionOf(c) === 'IPv6').length;
  if (v6 === 0) return;
  const secondaries = configs.filter((c) => props(c).primary !== true).length;
  if (regime === 'one' && (v6 > 1 || secondaries > 1)) {
    throw badRequest(
      'NetworkInterfaceIPv6IpConfigurationLimitReached',
      `Network interface ${nicId} can have one IPv6 IP configuration, as its only secondary IP configuration; the request has ${v6} IPv6 and ${secondaries} secondary IP configurations.`,
    );
  }
  if (v6 > MAX_IPV6_PER_NIC) {
    throw badRequest(
      'NetworkInterfaceIPv6IpConfigurationLimitReached',
      `Network interface ${nicId} would have ${v6} IPv6 IP configurations; the limit is ${MAX_IPV6_PER_NIC}.`,
    );
  }
}
