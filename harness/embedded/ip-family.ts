// The address families of an embedded run (`--ip-family ipv4|ipv6|dual`,
// docs/design/contracts.md "Address families"): the pod subnets the
// fulfiller gets, and what a pod must report in status.podIPs. The IPv6 pod
// subnet is a unique local one (RFC 4193) with as many addresses as the
// scenario's IPv4 subnet (a /24 gives a /120), so a scenario that runs its
// subnet dry does so in every family. Pure.
import { parseCidr } from '../../src/fulfiller/cidr.ts';
import { addressFamily, familyName, type FamilyName, type IpFamily } from '../../src/nnc/family.ts';

export const IP_FAMILY_CHOICES = ['ipv4', 'ipv6', 'dual'] as const;
export type IpFamilyChoice = (typeof IP_FAMILY_CHOICES)[number];

/** Where the IPv6 pod subnet starts: fd00:10:240::, beside the IPv4 default 10.240.0.0. */
export const IPV6_POD_PREFIX = 'fd00:10:240::';

/** The families of a choice, IPv4 first. */
export function familiesOf(choice: IpFamilyChoice): IpFamily[] {
  if (choice === 'dual') return [4, 6];
  return choice === 'ipv6' ? [6] : [4];
}

/** The IPv6 pod subnet as large as the IPv4 one: `fd00:10:240::/(96 + its prefix)`. */
export function ipv6PodSubnet(ipv4Subnet: string): string {
  return `${IPV6_POD_PREFIX}/${96 + parseCidr(ipv4Subnet).prefixLength}`;
}

/** The fulfiller's pod subnets for a choice, IPv4 first, from the scenario's IPv4 subnet. */
export function podSubnets(ipv4Subnet: string, choice: IpFamilyChoice): string[] {
  return familiesOf(choice).map((f) => (f === 4 ? ipv4Subnet : ipv6PodSubnet(ipv4Subnet)));
}

/** Addresses by family name (IPv4, IPv6); what is not an address is left out. */
export function byFamily(ips: readonly string[]): Map<FamilyName, string[]> {
  const out = new Map<FamilyName, string[]>();
  for (const ip of ips) {
    const f = addressFamily(ip);
    if (f === undefined) continue;
    const name = familyName(f);
    out.set(name, [...(out.get(name) ?? []), ip]);
  }
  return out;
}

/**
 * What is wrong with the addresses a Running pod reports, for a run of
 * `families`: one of each family and nothing else (a dual-stack pod with
 * only its IPv4 address is a half pod), or undefined when they are right.
 */
export function familyProblem(
  ips: readonly string[],
  families: readonly IpFamily[],
): string | undefined {
  const have = byFamily(ips);
  const wanted = families.map(familyName);
  for (const name of wanted) {
    const n = have.get(name)?.length ?? 0;
    if (n === 0) return `no ${name} address`;
    if (n > 1) return `${n} ${name} addresses`;
  }
  const other = [...have.keys()].find((name) => !wanted.includes(name));
  return other === undefined ? undefined : `an ${other} address in a run without ${other}`;
}
