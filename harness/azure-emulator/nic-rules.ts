// The rules ARM keeps on the ipConfigurations of one NIC, apart from address
// assignment (nic-put.ts). Each throws the ArmHttpError ARM answers; the
// sources are listed in this folder's README (conformance table).
//   one subnet        every ipConfiguration of a NIC in the same subnet
//   same ASGs         every ipConfiguration references the same set of ASGs
//   primary kept      the primary ipConfiguration is never deleted nor renamed
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
