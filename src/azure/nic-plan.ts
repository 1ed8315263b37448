// The NIC to PUT, computed from the NIC as read and one round's change. Pure.
//
// Ours on a NIC ("managed") are the non-primary ipConfigurations in the pod
// subnet whose names are UUIDs (an NNC IP id IS the ipConfiguration name),
// plus `pool-monitor-nc-primary`, the address of the node's network
// container. Everything else (the primary ipConfiguration and its
// load-balancer pools, other subnets' ipConfigurations, hand-made ones, NSG,
// DNS, tags, accelerated networking) is sent back exactly as read.
//
// New ipConfigurations are in the pod subnet (the NIC's own: nic-choice.ts)
// and reference the primary ipConfiguration's application security groups,
// as Azure requires of every ipConfiguration of a NIC. The primary is never
// renamed, moved or removed. At most 256 ipConfigurations per NIC, and 256
// private addresses per VM counting its other NICs.
//
// Managed ipConfigurations the NNC does not list yet (a round whose status
// write was lost: a crash between the PUT and the write) are adopted: they
// count toward this round's `add` and appear in the container, so nothing
// leaks and nothing is allocated twice.
import type { NetworkInterface, NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import { sameArmId } from './arm/ids.ts';

export const NC_PRIMARY_NAME = 'pool-monitor-nc-primary';
/** Azure's limit of ipConfigurations on one NIC. */
export const MAX_IP_CONFIGURATIONS = 256;
/** Azure's limit of private IP addresses on one VM (all its NICs). */
export const MAX_PRIVATE_IPS_PER_VM = 256;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function inSubnet(config: NetworkInterfaceIPConfiguration, subnetId: string): boolean {
  return sameArmId(config.subnet?.id, subnetId);
}

/** A secondary IP of ours: pod subnet, not primary, named by a UUID. */
export function isManagedSecondary(
  config: NetworkInterfaceIPConfiguration,
  podSubnetId: string,
): boolean {
  return config.primary !== true && UUID.test(config.name ?? '') && inSubnet(config, podSubnetId);
}

export function isNcPrimary(config: NetworkInterfaceIPConfiguration, podSubnetId: string): boolean {
  return (
    config.primary !== true && config.name === NC_PRIMARY_NAME && inSubnet(config, podSubnetId)
  );
}

export interface NicPlanInput {
  /** The NIC as read (with its etag). */
  nic: NetworkInterface;
  podSubnetId: string;
  /** New secondary IPs wanted. */
  add: number;
  /** Names (ids) to release; names that are not managed secondaries are ignored. */
  remove: Iterable<string>;
  /** Names the node's NNC already lists; absent: the NNC lists none. */
  known?: Iterable<string>;
  /** Fresh ipConfiguration names (UUIDs). */
  newName: () => string;
  /** At most this many new addresses, the NC primary included (the subnet's known free count). */
  limit?: number;
  /** ipConfigurations on the VM's other NICs (the per-VM cap counts them). */
  otherConfigs?: number;
  /**
   * ipConfigurations another writer removed, put back with the same name and
   * address (`Static`): NNC ids and, for `pool-monitor-nc-primary`, the NC primary.
   */
  restore?: Array<{ name: string; ip: string }>;
}

export interface NicPlan {
  /** The NIC to PUT. */
  nic: NetworkInterface;
  added: string[];
  removed: string[];
  /** Managed secondaries on the NIC the NNC did not list. */
  adopted: string[];
  /** Names put back (`restore`). */
  restored: string[];
  createsPrimary: boolean;
  /** Fewer added than wanted because of the 256 limit (per NIC, or per VM). */
  capped: boolean;
  /** Which cap: the NIC's or the VM's. */
  cap?: 'nic' | 'vm';
  /** Fewer added than wanted because of `limit`. */
  limited: boolean;
  /** False when the NIC as read already is the NIC wanted: no PUT. */
  changed: boolean;
}

function newConfig(
  name: string,
  podSubnetId: string,
  asgs: NetworkInterfaceIPConfiguration['applicationSecurityGroups'],
): NetworkInterfaceIPConfiguration {
  return {
    name,
    privateIPAllocationMethod: 'Dynamic',
    privateIPAddressVersion: 'IPv4',
    subnet: { id: podSubnetId },
    primary: false,
    ...(asgs?.length ? { applicationSecurityGroups: asgs.map((a) => ({ id: a.id! })) } : {}),
  };
}

export function planNic(input: NicPlanInput): NicPlan {
  const { nic, podSubnetId } = input;
  if (!Number.isInteger(input.add) || input.add < 0)
    throw new Error(`add must be an integer >= 0, got ${input.add}`);
  const configs = nic.ipConfigurations ?? [];
  const remove = new Set(input.remove);
  const known = new Set(input.known ?? []);
  const kept: NetworkInterfaceIPConfiguration[] = [];
  const removed: string[] = [];
  const adopted: string[] = [];
  for (const c of configs) {
    if (isManagedSecondary(c, podSubnetId) && remove.has(c.name!)) {
      removed.push(c.name!);
      continue;
    }
    if (isManagedSecondary(c, podSubnetId) && !known.has(c.name!)) adopted.push(c.name!);
    kept.push(c);
  }
  const asgs = configs.find((c) => c.primary === true)?.applicationSecurityGroups;
  const restored: string[] = [];
  const present = new Set(kept.map((c) => c.name?.toLowerCase()));
  for (const r of input.restore ?? []) {
    if (present.has(r.name.toLowerCase())) continue;
    present.add(r.name.toLowerCase());
    restored.push(r.name);
    kept.push({
      ...newConfig(r.name, podSubnetId, asgs),
      privateIPAllocationMethod: 'Static',
      privateIPAddress: r.ip,
    });
  }
  const createsPrimary = !kept.some((c) => isNcPrimary(c, podSubnetId));
  const wanted = Math.max(0, input.add - adopted.length);
  const nicRoom = MAX_IP_CONFIGURATIONS - kept.length - (createsPrimary ? 1 : 0);
  const vmRoom = nicRoom - (input.otherConfigs ?? 0);
  const room = Math.min(nicRoom, vmRoom);
  const budget = input.limit === undefined ? Infinity : input.limit - (createsPrimary ? 1 : 0);
  const count = Math.max(0, Math.min(wanted, room, budget));
  const fresh: NetworkInterfaceIPConfiguration[] = [];
  if (createsPrimary) fresh.push(newConfig(NC_PRIMARY_NAME, podSubnetId, asgs));
  const added: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = input.newName();
    if (!UUID.test(name)) throw new Error(`new ipConfiguration name "${name}" is not a UUID`);
    added.push(name);
    fresh.push(newConfig(name, podSubnetId, asgs));
  }
  const capped = count < Math.min(wanted, budget);
  return {
    nic: { ...nic, ipConfigurations: [...kept, ...fresh] },
    added,
    removed,
    adopted,
    restored,
    createsPrimary,
    capped,
    ...(capped ? { cap: vmRoom < nicRoom ? ('vm' as const) : ('nic' as const) } : {}),
    limited: count < wanted && budget < Math.min(wanted, room),
    changed: fresh.length > 0 || removed.length > 0 || restored.length > 0,
  };
}

/** The NIC with every managed ipConfiguration (secondaries and the NC primary) removed. */
export function planRelease(
  nic: NetworkInterface,
  podSubnetId: string,
): { nic: NetworkInterface; removed: string[] } {
  const removed: string[] = [];
  const kept = (nic.ipConfigurations ?? []).filter((c) => {
    const ours = isManagedSecondary(c, podSubnetId) || isNcPrimary(c, podSubnetId);
    if (ours) removed.push(c.name!);
    return !ours;
  });
  return { nic: { ...nic, ipConfigurations: kept }, removed };
}
