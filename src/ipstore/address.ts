// Pure helpers for IP addresses: validation and a sort key. The store orders
// IPs numerically (10.0.0.2 before 10.0.0.10) so the CNI gets the lowest free
// address among equals and listings read the way a person expects.
import { isIP } from 'node:net';

/** True for a textual IPv4 or IPv6 address (no prefix, no zone). */
export function isIpAddress(value: unknown): value is string {
  return typeof value === 'string' && isIP(value) !== 0;
}

/**
 * A fixed-width hex key (32 digits) whose string order is the numeric order of
 * the address; IPv4 maps into ::ffff:0:0/96 so both families sort together.
 */
export function ipSortKey(address: string): string {
  const family = isIP(address);
  if (family === 4) {
    const hex = address
      .split('.')
      .map((octet) => Number(octet).toString(16).padStart(2, '0'))
      .join('');
    return `00000000000000000000ffff${hex}`;
  }
  if (family === 6) return expandIpv6(address);
  throw new Error(`not an IP address: ${JSON.stringify(address)}`);
}

function expandIpv6(address: string): string {
  let text = address;
  // An embedded dotted IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    const v4 = ipSortKey(dotted[1]).slice(24);
    text = `${text.slice(0, dotted.index)}${v4.slice(0, 4)}:${v4.slice(4)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(missing).fill('0'), ...tailGroups];
  return groups.map((g) => g.toLowerCase().padStart(4, '0')).join('');
}

/** Compares two addresses numerically (for sorting records). */
export function compareIps(a: string, b: string): number {
  const ka = ipSortKey(a);
  const kb = ipSortKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
