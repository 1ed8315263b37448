// IPv4 CIDR arithmetic for the CIDR backend. Addresses are handled as
// unsigned 32-bit integers so allocation is plain counting. Azure reserves the
// network address, the next three (gateway and two DNS) and the broadcast
// address of every subnet; the same rule applies here so the simulation looks
// like a real VNet.

export interface Cidr {
  /** Canonical text, e.g. "10.240.0.0/16". */
  text: string;
  /** Network address as an unsigned integer. */
  network: number;
  prefixLength: number;
  /** Number of addresses in the block, reserved ones included. */
  size: number;
}

/** Addresses Azure keeps back at the start of every subnet (.0 to .3). */
export const RESERVED_AT_START = 4;
/** And at the end (the broadcast address). */
export const RESERVED_AT_END = 1;

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** Parses a dotted quad; throws a clear error on anything else. */
export function ipToInt(ip: string): number {
  const m = IPV4.exec(ip);
  if (!m) throw new Error(`invalid IPv4 address "${ip}"`);
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const octet = Number(m[i]);
    if (octet > 255) throw new Error(`invalid IPv4 address "${ip}"`);
    value = value * 256 + octet;
  }
  return value;
}

/** Formats an unsigned 32-bit integer as a dotted quad. */
export function intToIp(value: number): string {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    throw new Error(`not an IPv4 address value: ${value}`);
  }
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/**
 * Parses "a.b.c.d/n". The prefix must leave room for at least one usable
 * address after Azure's reservations (so /29 is the smallest), and the
 * address must be the network address itself.
 */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf('/');
  if (slash < 0) throw new Error(`invalid CIDR "${text}": expected address/prefix`);
  const network = ipToInt(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,2}$/.test(prefixText)) throw new Error(`invalid CIDR "${text}": bad prefix length`);
  const prefixLength = Number(prefixText);
  if (prefixLength > 29) {
    throw new Error(`invalid CIDR "${text}": prefix /${prefixLength} leaves no usable address`);
  }
  if (prefixLength < 8) throw new Error(`invalid CIDR "${text}": prefix shorter than /8`);
  const size = 2 ** (32 - prefixLength);
  if (network % size !== 0) {
    throw new Error(
      `invalid CIDR "${text}": host bits set (network is ${intToIp(network - (network % size))})`,
    );
  }
  return { text: `${intToIp(network)}/${prefixLength}`, network, prefixLength, size };
}

/** First address that may be handed out (network + 4). */
export function firstUsable(cidr: Cidr): number {
  return cidr.network + RESERVED_AT_START;
}

/** Last address that may be handed out (broadcast − 1). */
export function lastUsable(cidr: Cidr): number {
  return cidr.network + cidr.size - 1 - RESERVED_AT_END;
}

/** How many addresses may be handed out in total. */
export function usableCount(cidr: Cidr): number {
  return cidr.size - RESERVED_AT_START - RESERVED_AT_END;
}

/** The subnet's default gateway, as Azure places it: network + 1. */
export function gatewayOf(cidr: Cidr): string {
  return intToIp(cidr.network + 1);
}

/** True when `value` lies inside the block (reserved addresses included). */
export function contains(cidr: Cidr, value: number): boolean {
  return value >= cidr.network && value < cidr.network + cidr.size;
}

/** True when `value` may be handed out: inside the block and not reserved. */
export function isUsable(cidr: Cidr, value: number): boolean {
  return value >= firstUsable(cidr) && value <= lastUsable(cidr);
}

/** Parses an IP leniently: undefined instead of an exception. */
export function tryIpToInt(ip: unknown): number | undefined {
  if (typeof ip !== 'string') return undefined;
  try {
    return ipToInt(ip);
  } catch {
    return undefined;
  }
}
