// Which of a VM's NICs takes its pod IPs, and in which subnet. Pure.
//
// Azure keeps every ipConfiguration of one NIC in one subnet, so pod IPs go
// on the NIC whose primary ipConfiguration is in the pod subnet:
//   node subnet layout  the VM's primary NIC, in its own subnet (classic
//                       Azure CNI): without --pod-subnet-id, each node's pod
//                       subnet is its NIC's; with it, that NIC must be in it;
//   pod NIC layout      the VM has a second NIC in --pod-subnet-id.
// A VM with no such NIC cannot take pod IPs: the node is "unfit", with a
// message naming its NIC, that NIC's subnet and the pod subnet.
import type { NetworkInterface, NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import { sameArmId } from './arm/ids.ts';

export type NicChoice =
  | {
      nic: NetworkInterface;
      /** The subnet its pod IPs go in: its primary ipConfiguration's. */
      podSubnetId: string;
      /** The VM's own address: its primary NIC's primary ipConfiguration. */
      nodeIP?: string;
      /** ipConfigurations on the VM's other NICs (they count toward the per-VM cap). */
      otherConfigs: number;
    }
  | { unfit: string };

export function primaryConfig(nic: NetworkInterface): NetworkInterfaceIPConfiguration | undefined {
  const configs = nic.ipConfigurations ?? [];
  return configs.find((c) => c.primary === true) ?? (configs.length === 1 ? configs[0] : undefined);
}

const lastSegment = (id: string | undefined): string => id?.split('/').filter(Boolean).pop() ?? '?';

/** The VM's primary NIC (flagged primary, or its only NIC). */
export function vmPrimaryNic(nics: NetworkInterface[]): NetworkInterface | undefined {
  return nics.find((n) => n.primary === true) ?? (nics.length === 1 ? nics[0] : undefined);
}

/** The subnet a NIC's pod IPs go in: its primary ipConfiguration's. */
export function nicSubnetId(nic: NetworkInterface): string | undefined {
  return primaryConfig(nic)?.subnet?.id;
}

function chosen(nics: NetworkInterface[], nic: NetworkInterface, vmPrimary?: NetworkInterface) {
  const nodeIP = primaryConfig(vmPrimary ?? nic)?.privateIPAddress;
  const otherConfigs = nics
    .filter((n) => n !== nic)
    .reduce((sum, n) => sum + (n.ipConfigurations?.length ?? 0), 0);
  return { nic, podSubnetId: nicSubnetId(nic)!, otherConfigs, ...(nodeIP ? { nodeIP } : {}) };
}

/** `podSubnetId` undefined: the node subnet layout, pod IPs in the VM's own NIC's subnet. */
export function chooseNic(nics: NetworkInterface[], podSubnetId?: string): NicChoice {
  const vmPrimary = vmPrimaryNic(nics);
  if (podSubnetId === undefined) {
    if (vmPrimary && nicSubnetId(vmPrimary)) return chosen(nics, vmPrimary, vmPrimary);
    const names = nics.map((n) => n.name ?? '?').join(', ');
    return {
      unfit:
        `the VM's NICs (${names}) have no primary NIC with a primary ipConfiguration in a subnet: ` +
        `without --pod-subnet-id, pod IPs go in the VM's primary NIC's subnet`,
    };
  }
  const inPod = nics
    .filter((n) => sameArmId(primaryConfig(n)?.subnet?.id, podSubnetId))
    .sort((a, b) => Number(b === vmPrimary) - Number(a === vmPrimary));
  const nic = inPod[0];
  if (!nic) {
    const shown = vmPrimary ?? nics[0];
    const subnet = lastSegment(primaryConfig(shown ?? {})?.subnet?.id);
    return {
      unfit:
        `NIC ${shown?.name ?? '?'} is in subnet ${subnet}, not in the pod subnet ${lastSegment(podSubnetId)}, ` +
        `and the VM has no NIC in the pod subnet: pod IPs go on a NIC in the pod subnet ` +
        `(node subnet layout: leave --pod-subnet-id out, or give the nodes' subnet; ` +
        `pod NIC layout: a second NIC in the pod subnet)`,
    };
  }
  return chosen(nics, nic, vmPrimary);
}
