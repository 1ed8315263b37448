// The NIC to PUT, computed from the NIC as read and one round's change. Pure.
//
// Ours on a NIC ("managed") are the non-primary ipConfigurations in the pod
// subnet whose names are UUIDs (an NNC IP id IS the ipConfiguration name),
// plus `pool-monitor-nc-primary`, the address of the node's network
// container, each of a family: IPv4, or IPv6 (`privateIPAddressVersion:
// IPv6`, its NC primary `pool-monitor-nc-primary-ipv6`) on a dual-stack pod
// subnet; both families change in the same PUT. Everything else (the primary ipConfiguration and its
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
import type { IpFamily } from '../nnc/family.ts';
import { sameArmId } from './arm/ids.ts';
import { configFamily, isNcPrimaryName, ncPrimaryName } from './ip-family.ts';

export { NC_PRIMARY_NAME, NC_PRIMARY_NAME_IPV6 } from './ip-family.ts';
/** Azure's limit of ipConfigurations on one NIC (both families). */
export const MAX_IP_CONFIGURATIONS = 256;
/** Azure's limit of private IP addresses on one VM (all its NICs, both families). */
export const MAX_PRIVATE_IPS_PER_VM = 256;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function inSubnet(config: NetworkInterfaceIPConfiguration, subnetId: string): boolean {
  return sameArmId(config.subnet?.id, subnetId);
}

/** A secondary IP of ours of a family (IPv4 unless said): pod subnet, not primary, named by a UUID. */
export function isManagedSecondary(
  config: NetworkInterfaceIPConfiguration,
  podSubnetId: string,
  family: IpFamily = 4,
): boolean {
  return (
    config.primary !== true &&
    UUID.test(config.name ?? '') &&
    inSubnet(config, podSubnetId) &&
    configFamily(config) === family
  );
}

/** The NC primary ipConfiguration of a family's container (IPv4 unless said). */
export function isNcPrimary(
  config: NetworkInterfaceIPConfiguration,
  podSubnetId: string,
  family: IpFamily = 4,
): boolean {
  return (
    config.primary !== true &&
    config.name === ncPrimaryName(family) &&
    inSubnet(config, podSubnetId) &&
    configFamily(config) === family
  );
}

/** What one round changes in one family of the NIC's pod addresses. */
export interface FamilyPlanInput {
  family: IpFamily;
  /** New secondary IPs wanted. */
  add: number;
  /** Names (ids) to release; names that are not managed secondaries of the family are ignored. */
  remove: Iterable<string>;
  /** Names the node's NNC already lists; absent: the NNC lists none. */
  known?: Iterable<string>;
  /** At most this many new addresses, the NC primary included (the subnet's known free count). */
  limit?: number;
  /**
   * ipConfigurations another writer removed, put back with the same name and
   * address (`Static`): NNC ids and the family's NC primary.
   */
  restore?: Array<{ name: string; ip: string }>;
}

/** One family's round on a NIC (IPv4: the single-family input). */
export interface NicPlanInput extends Omit<FamilyPlanInput, 'family'> {
  /** The NIC as read (with its etag). */
  nic: NetworkInterface;
  podSubnetId: string;
  /** Fresh ipConfiguration names (UUIDs). */
  newName: () => string;
  /** ipConfigurations on the VM's other NICs (the per-VM cap counts them). */
  otherConfigs?: number;
}

/** Every family's round on a NIC, IPv4 first: one NIC to PUT. */
export interface NicFamiliesInput {
  nic: NetworkInterface;
  podSubnetId: string;
  newName: () => string;
  otherConfigs?: number;
  families: FamilyPlanInput[];
}

/** What the plan does in one family. */
export interface FamilyPlan {
  family: IpFamily;
  added: string[];
  removed: string[];
  /** Managed secondaries of the family on the NIC the NNC did not list. */
  adopted: string[];
  /** Names put back (`restore`). */
  restored: string[];
  /** The family's NC primary is created by this write. */
  createsPrimary: boolean;
  /** Fewer added than wanted because of `limit`. */
  limited: boolean;
}

export interface NicFamiliesPlan {
  /** The NIC to PUT. */
  nic: NetworkInterface;
  /** In the order of the input's families. */
  families: FamilyPlan[];
  /** Fewer added than wanted because of the 256 limit (per NIC, or per VM). */
  capped: boolean;
  /** Which cap: the NIC's or the VM's. */
  cap?: 'nic' | 'vm';
  /** False when the NIC as read already is the NIC wanted: no PUT. */
  changed: boolean;
}

/** One family's plan (planNic): the family's figures with the NIC's. */
export type NicPlan = Omit<FamilyPlan, 'family'> & Omit<NicFamiliesPlan, 'families'>;

function newConfig(
  name: string,
  podSubnetId: string,
  asgs: NetworkInterfaceIPConfiguration['applicationSecurityGroups'],
  family: IpFamily,
): NetworkInterfaceIPConfiguration {
  return {
    name,
    privateIPAllocationMethod: 'Dynamic',
    privateIPAddressVersion: family === 6 ? 'IPv6' : 'IPv4',
    subnet: { id: podSubnetId },
    primary: false,
    ...(asgs?.length ? { applicationSecurityGroups: asgs.map((a) => ({ id: a.id! })) } : {}),
  };
}

/** One family's round (IPv4): planNicFamilies with that family alone. */
export function planNic(input: NicPlanInput): NicPlan {
  const { nic, podSubnetId, newName, otherConfigs, ...family } = input;
  const plan = planNicFamilies({
    nic,
    podSubnetId,
    newName,
    ...(otherConfigs !== undefined ? { otherConfigs } : {}),
    families: [{ family: 4, ...family }],
  });
  const { family: _f, ...only } = plan.families[0]!;
  return {
    ...only,
    nic: plan.nic,
    capped: plan.capped,
    ...(plan.cap ? { cap: plan.cap } : {}),
    changed: plan.changed,
  };
}

/**
 * The NIC to PUT for every family's change at once. The NIC's room (its 256,
 * the VM's 256) is shared: when it cannot hold all that is wanted, each new
 * address goes to the family whose pool is smallest, so the families stay
 * in step (a pod needs one of each).
 */
export function planNicFamilies(input: NicFamiliesInput): NicFamiliesPlan {
  const { nic, podSubnetId } = input;
  for (const f of input.families) {
    if (!Number.isInteger(f.add) || f.add < 0)
      throw new Error(`add must be an integer >= 0, got ${f.add}`);
  }
  const configs = nic.ipConfigurations ?? [];
  const fams = input.families.map((f) => ({
    input: f,
    remove: new Set(f.remove),
    known: new Set(f.known ?? []),
    removed: [] as string[],
    adopted: [] as string[],
    restored: [] as string[],
    /** Managed secondaries of the family the NIC keeps. */
    held: 0,
  }));
  const kept: NetworkInterfaceIPConfiguration[] = [];
  for (const c of configs) {
    const f = fams.find((x) => isManagedSecondary(c, podSubnetId, x.input.family));
    if (f && f.remove.has(c.name!)) {
      f.removed.push(c.name!);
      continue;
    }
    if (f) {
      f.held++;
      if (!f.known.has(c.name!)) f.adopted.push(c.name!);
    }
    kept.push(c);
  }
  const asgs = configs.find((c) => c.primary === true)?.applicationSecurityGroups;
  const present = new Set(kept.map((c) => c.name?.toLowerCase()));
  for (const f of fams) {
    for (const r of f.input.restore ?? []) {
      if (present.has(r.name.toLowerCase())) continue;
      present.add(r.name.toLowerCase());
      f.restored.push(r.name);
      if (!isNcPrimaryName(r.name)) f.held++;
      kept.push({
        ...newConfig(r.name, podSubnetId, asgs, f.input.family),
        privateIPAllocationMethod: 'Static',
        privateIPAddress: r.ip,
      });
    }
  }
  const creates = fams.map((f) => !kept.some((c) => isNcPrimary(c, podSubnetId, f.input.family)));
  const primaries = creates.filter(Boolean).length;
  const nicRoom = MAX_IP_CONFIGURATIONS - kept.length - primaries;
  const vmRoom = nicRoom - (input.otherConfigs ?? 0);
  const rawRoom = Math.min(nicRoom, vmRoom);
  const room = Math.max(0, rawRoom);
  const wanted = fams.map((f) => Math.max(0, f.input.add - f.adopted.length));
  const budget = fams.map((f, i) =>
    f.input.limit === undefined ? Infinity : f.input.limit - (creates[i] ? 1 : 0),
  );
  const want = fams.map((_, i) => Math.max(0, Math.min(wanted[i]!, budget[i]!)));
  const counts = shareRoom(
    want,
    fams.map((f) => f.held),
    room,
  );
  const fresh: NetworkInterfaceIPConfiguration[] = [];
  const added = fams.map(() => [] as string[]);
  fams.forEach((f, i) => {
    const family = f.input.family;
    if (creates[i]) fresh.push(newConfig(ncPrimaryName(family), podSubnetId, asgs, family));
    for (let n = 0; n < counts[i]!; n++) {
      const name = input.newName();
      if (!UUID.test(name)) throw new Error(`new ipConfiguration name "${name}" is not a UUID`);
      added[i]!.push(name);
      fresh.push(newConfig(name, podSubnetId, asgs, family));
    }
  });
  const capped = counts.some((c, i) => c < want[i]!);
  return {
    nic: { ...nic, ipConfigurations: [...kept, ...fresh] },
    families: fams.map((f, i) => ({
      family: f.input.family,
      added: added[i]!,
      removed: f.removed,
      adopted: f.adopted,
      restored: f.restored,
      createsPrimary: creates[i]!,
      limited: counts[i]! < wanted[i]! && budget[i]! < Math.min(wanted[i]!, rawRoom),
    })),
    capped,
    ...(capped ? { cap: vmRoom < nicRoom ? ('vm' as const) : ('nic' as const) } : {}),
    changed: fresh.length > 0 || fams.some((f) => f.removed.length > 0 || f.restored.length > 0),
  };
}

/**
 * How many of `want` each family gets out of `room`: all when it fits;
 * otherwise one at a time to the family holding fewest (its held count plus
 * what it got so far), the first on a tie.
 */
export function shareRoom(want: number[], held: number[], room: number): number[] {
  const total = want.reduce((a, b) => a + b, 0);
  if (total <= room) return [...want];
  const got = want.map(() => 0);
  for (let left = room; left > 0; left--) {
    let best = -1;
    for (let i = 0; i < want.length; i++) {
      if (got[i]! >= want[i]!) continue;
      if (best < 0 || held[i]! + got[i]! < held[best]! + got[best]!) best = i;
    }
    if (best < 0) break;
    got[best]!++;
  }
  return got;
}

/** The NIC with every managed ipConfiguration (secondaries and NC primaries, both families) removed. */
export function planRelease(
  nic: NetworkInterface,
  podSubnetId: string,
): { nic: NetworkInterface; removed: string[]; byFamily: Map<IpFamily, number> } {
  const removed: string[] = [];
  const byFamily = new Map<IpFamily, number>();
  const kept = (nic.ipConfigurations ?? []).filter((c) => {
    const family = configFamily(c);
    const ours = isManagedSecondary(c, podSubnetId, family) || isNcPrimary(c, podSubnetId, family);
    if (ours) {
      removed.push(c.name!);
      byFamily.set(family, (byFamily.get(family) ?? 0) + 1);
    }
    return !ours;
  });
  return { nic: { ...nic, ipConfigurations: kept }, removed, byFamily };
}
