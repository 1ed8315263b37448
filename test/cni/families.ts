// The address families of the real-plugin tests: NNC statuses with one
// dynamic network container per family as the fulfiller writes them
// (docs/design/contracts.md, "Address families"), the IPv4 one the sidecar
// harness's (10.10.0.0/16) and an IPv6 one beside it (fd00:10::/112), the
// addresses of a CNI result by family, and pings in the address's family.
import { container, ipOf } from '../sidecar/harness.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { settled } from '../../harness/kubelet/netns-cni.ts';
import { inNs } from './netns.ts';

export type Families = 'dual' | 'ipv6';
export const FAMILY_RUNS: readonly Families[] = ['dual', 'ipv6'];

export const V6_SUBNET = 'fd00:10::/112';
export const V6_GATEWAY = 'fd00:10::1';

/** IP number i of the IPv6 container: fd00:10::<i + 2>, its id distinct from the IPv4 one's. */
export function ip6Of(i: number): { name: string; ip: string } {
  return {
    name: `00000000-0000-4000-8006-${i.toString(16).padStart(12, '0')}`,
    ip: `fd00:10::${(i + 2).toString(16)}`,
  };
}

/** The IPv6 container holding addresses `ips` (numbers), its primaryIP given. */
export function container6(ips: number[], primaryIP = 'fd00:10::ff01'): NetworkContainer {
  return {
    id: 'nc-dyn-6',
    assignmentMode: 'dynamic',
    type: 'VNETBlock',
    primaryIP,
    subnetName: 'subnet-a-v6',
    subnetAddressSpace: V6_SUBNET,
    defaultGateway: V6_GATEWAY,
    version: 1,
    nodeIP: '10.0.0.4',
    ipAssignments: ips.map(ip6Of),
  };
}

/** The dynamic containers of a node for `families`: IPv4 first. */
export function containers(
  families: Families,
  ips: number[],
  primary: { v4?: string; v6?: string } = {},
): NetworkContainer[] {
  const v6 = container6(ips, primary.v6);
  if (families === 'ipv6') return [v6];
  const v4 = container(ips);
  return [primary.v4 ? { ...v4, primaryIP: primary.v4 } : v4, v6];
}

/** The addresses number i stands for in each family of the run, IPv4 first. */
export function addressesOf(families: Families, i: number): string[] {
  return families === 'ipv6' ? [ip6Of(i).ip] : [ipOf(i).ip, ip6Of(i).ip];
}

/** The addresses of a CNI result, without prefixes, in its order. */
export function resultIps(result: Record<string, unknown> | undefined): string[] {
  return ((result?.ips ?? []) as { address: string }[]).map((e) => e.address.split('/')[0]!);
}

/**
 * Waits until the interface's IPv6 addresses left "tentative" (the kernel's
 * duplicate address detection, about a second; the reference plugins return
 * before it is done); throws when one is a duplicate or does not settle.
 */
export async function dadDone(ns: string, dev = 'eth0'): Promise<void> {
  const why = await settled(ns, dev);
  if (why !== undefined) throw new Error(`${ns} ${dev}: ${why}`);
}

/** `ping -4` or `ping -6` (the address's family), one echo; its output (throws when unanswered). */
export function ping(ns: string, ip: string): string {
  return inNs(ns, ['ping', ip.includes(':') ? '-6' : '-4', '-c', '1', '-W', '3', ip]);
}
