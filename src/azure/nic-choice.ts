// Which of a VM's NICs takes its pod IPs. Pure.
//
// Azure keeps every ipConfiguration of one NIC in one subnet, so pod IPs go
// on the NIC whose primary ipConfiguration is in the pod subnet:
//   node subnet layout  the VM's primary NIC is in the pod subnet (the node
//                       subnet is the pod subnet, classic Azure CNI);
//   pod NIC layout      the VM has a second NIC in the pod subnet.
// A VM with no such NIC cannot take pod IPs: the node is "unfit", with a
// message naming its NIC, that NIC's subnet and the pod subnet.
import type { NetworkInterface, NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import { sameArmId } from './arm/ids.ts';

export type NicChoice =
  | {
      nic: NetworkInterface;
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

export function chooseNic(nics: NetworkInterface[], podSubnetId: string): NicChoice {
  const vmPrimary = vmPrimaryNic(nics);
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
        `(node subnet layout: --pod-subnet-id is the nodes' subnet; pod NIC layout: a second NIC in the pod subnet)`,
    };
  }
  const nodeIP = primaryConfig(vmPrimary ?? nic)?.privateIPAddress;
  const otherConfigs = nics
    .filter((n) => n !== nic)
    .reduce((sum, n) => sum + (n.ipConfigurations?.length ?? 0), 0);
  return { nic, otherConfigs, ...(nodeIP ? { nodeIP } : {}) };
}
