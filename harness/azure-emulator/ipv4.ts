// IPv4 prefixes as the emulated subnets hand them out, written for the
// emulator (it shares no address rule with the product it checks). Azure
// keeps back the first four addresses of every subnet (network, default
// gateway, two for DNS) and the last (broadcast), and its smallest subnet is
// a /29 (Azure docs, virtual networks FAQ: "Azure reserves the first four
// and last IP address for a total of 5 IP addresses within each subnet";
// "the smallest supported IPv4 subnet is /29").

export interface Prefix {
  /** Canonical text, e.g. "10.240.0.0/16". */
  text: string;
  /** Network address as an unsigned 32-bit integer. */
  network: number;
  /** Addresses in the block, reserved ones included. */
  size: number;
}

const QUAD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** A dotted quad as an integer; undefined for anything else. */
export function toInt(ip: string): number | undefined {
  const m = QUAD.exec(ip);
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  return octets.reduce((v, o) => v * 256 + o, 0);
}

export function toQuad(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** Parses "a.b.c.d/n" (a /8 to a /29, host bits clear); throws for anything else. */
export function parsePrefix(text: string): Prefix {
  const [address = '', bits = ''] = text.split('/');
  const network = toInt(address);
  const length = /^\d{1,2}$/.test(bits) ? Number(bits) : NaN;
  if (network === undefined || !(length >= 8 && length <= 29)) {
    throw new Error(`invalid address prefix "${text}" (a /8 to a /29)`);
  }
  const size = 2 ** (32 - length);
  if (network % size !== 0) throw new Error(`invalid address prefix "${text}": host bits set`);
  return { text: `${toQuad(network)}/${length}`, network, size };
}

/** The first address a Dynamic allocation may get (network + 4). */
export const firstHost = (p: Prefix): number => p.network + 4;
/** The last (the one before broadcast). */
export const lastHost = (p: Prefix): number => p.network + p.size - 2;
/** Addresses that may ever be handed out. */
export const hostCount = (p: Prefix): number => p.size - 5;
/** The default gateway: network + 1. */
export const gatewayOf = (p: Prefix): string => toQuad(p.network + 1);
/** Inside the block at all (reserved ones included). */
export const inPrefix = (p: Prefix, value: number): boolean =>
  value >= p.network && value < p.network + p.size;
