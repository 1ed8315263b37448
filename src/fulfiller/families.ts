// The pod subnets of the CIDR backend, one per address family
// (docs/design/contracts.md, "Address families"): `--subnet` once with an
// IPv4 or an IPv6 CIDR, or twice, once with each (dual-stack). Pure.
import type { IpFamily } from '../nnc/family.ts';
import { cidrFamily } from '../nnc/family.ts';
import { parseCidr } from './cidr.ts';
import { parseCidr6 } from './cidr6.ts';

/** A subnet's canonical text, whichever its family; a clear error on anything else. */
export function canonicalSubnet(text: string): string {
  const family = cidrFamily(text);
  if (family === 6) return parseCidr6(text).text;
  if (family === 4) return parseCidr(text).text;
  throw new Error(`invalid CIDR "${text}": not an IPv4 or IPv6 address/prefix`);
}

/**
 * The subnets by family, IPv4 first, each canonical; a clear error for two
 * of one family, none, or a CIDR of neither.
 */
export function subnetsByFamily(cidrs: readonly string[]): Array<[IpFamily, string]> {
  const out = new Map<IpFamily, string>();
  for (const text of cidrs) {
    const cidr = canonicalSubnet(text);
    const family = cidrFamily(cidr)!;
    if (out.has(family))
      throw new Error(
        `--subnet ${cidr}: a second IPv${family} subnet (${out.get(family)} is one); give one per address family`,
      );
    out.set(family, cidr);
  }
  if (out.size === 0) throw new Error('no --subnet given');
  return [...out].sort(([a], [b]) => a - b);
}
