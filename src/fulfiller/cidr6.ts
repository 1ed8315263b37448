// IPv6 CIDR arithmetic for the CIDR backend (and the Azure backend's pod
// subnet prefixes): addresses as 128-bit bigints, so a /64 is counted, never
// enumerated. Azure reserves the first four addresses and the last one of
// every subnet, IPv6 ones too ("Azure reserves the first four and last IP
// address for a total of 5 IP addresses within each subnet",
// https://learn.microsoft.com/azure/virtual-network/virtual-networks-faq#are-there-any-restrictions-on-using-ip-addresses-within-these-subnets);
// the same rule applies here. Parsing is node:net's `isIPv6` for what is an
// address, then the groups expanded by hand (`::`, an embedded IPv4 tail).
import { isIPv4, isIPv6 } from 'node:net';

export interface Cidr6 {
  /** Canonical text (RFC 5952: lower case, the longest zero run as `::`), e.g. "fd00:10:240::/112". */
  text: string;
  network: bigint;
  prefixLength: number;
  /** Number of addresses in the block, reserved ones included. */
  size: bigint;
}

const MAX = (1n << 128n) - 1n;
/** The shortest IPv6 prefix a pod subnet may have (Azure's smallest IPv6 subnet is a /64; any /48 is room enough). */
const SHORTEST = 48;

/** Parses an IPv6 address; throws a clear error on anything else. */
export function ip6ToBig(ip: string): bigint {
  if (typeof ip !== 'string' || !isIPv6(ip) || ip.includes('%'))
    throw new Error(`invalid IPv6 address "${ip}"`);
  let text = ip.toLowerCase();
  // An embedded IPv4 tail (::ffff:10.0.0.1) becomes its two groups.
  const tail = text.lastIndexOf(':');
  const v4 = text.slice(tail + 1);
  if (isIPv4(v4)) {
    const o = v4.split('.').map(Number);
    text = `${text.slice(0, tail + 1)}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = rest === undefined ? [] : rest ? rest.split(':') : [];
  const groups =
    rest === undefined
      ? left
      : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  let value = 0n;
  for (const g of groups) value = (value << 16n) | BigInt(parseInt(g || '0', 16));
  return value;
}

/** Formats a 128-bit value as RFC 5952 text. */
export function bigToIp6(value: bigint): string {
  if (value < 0n || value > MAX) throw new Error(`not an IPv6 address value: ${value}`);
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  // The longest run of two or more zero groups (the first of equal ones) becomes "::".
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/**
 * Parses "addr/n" for an IPv6 pod subnet: the prefix between /48 and /125
 * (room for one usable address after the five reserved), the address the
 * network itself.
 */
export function parseCidr6(text: string): Cidr6 {
  const slash = text.indexOf('/');
  if (slash < 0) throw new Error(`invalid CIDR "${text}": expected address/prefix`);
  const network = ip6ToBig(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) throw new Error(`invalid CIDR "${text}": bad prefix length`);
  const prefixLength = Number(prefixText);
  if (prefixLength > 125)
    throw new Error(`invalid CIDR "${text}": prefix /${prefixLength} leaves no usable address`);
  if (prefixLength < SHORTEST)
    throw new Error(`invalid CIDR "${text}": prefix shorter than /${SHORTEST}`);
  const size = 1n << BigInt(128 - prefixLength);
  if (network % size !== 0n)
    throw new Error(
      `invalid CIDR "${text}": host bits set (network is ${bigToIp6(network - (network % size))})`,
    );
  return { text: `${bigToIp6(network)}/${prefixLength}`, network, prefixLength, size };
}

/** Addresses Azure keeps back at the start (network to network + 3) and at the end of a subnet. */
export const RESERVED6_AT_START = 4n;
export const RESERVED6_AT_END = 1n;

export function firstUsable6(c: Cidr6): bigint {
  return c.network + RESERVED6_AT_START;
}

export function lastUsable6(c: Cidr6): bigint {
  return c.network + c.size - 1n - RESERVED6_AT_END;
}

/** How many addresses may be handed out (a bigint: a /64 has 2^64 − 5). */
export function usableCount6(c: Cidr6): bigint {
  return c.size - RESERVED6_AT_START - RESERVED6_AT_END;
}

/** The subnet's default gateway, as Azure places it: network + 1. */
export function gatewayOf6(c: Cidr6): string {
  return bigToIp6(c.network + 1n);
}

/** The value of an IPv6 text, or undefined. */
export function tryIp6ToBig(ip: unknown): bigint | undefined {
  if (typeof ip !== 'string') return undefined;
  try {
    return ip6ToBig(ip);
  } catch {
    return undefined;
  }
}

export function contains6(c: Cidr6, value: bigint): boolean {
  return value >= c.network && value < c.network + c.size;
}

export function isUsable6(c: Cidr6, value: bigint): boolean {
  return value >= firstUsable6(c) && value <= lastUsable6(c);
}
