// IPv6 prefixes as the emulated subnets hand them out, written for the
// emulator (it shares no address rule with the product it checks). An Azure
// IPv6 subnet is exactly a /64 (Azure docs, virtual networks FAQ: "IPv6
// subnets must be exactly /64 in size"; "What is IPv6 for Azure Virtual
// Network?": "The subnets for IPv6 must be exactly /64 in size"), and Azure
// keeps back the first four addresses of every subnet and its last ("Azure
// reserves 5 IP addresses within each subnet"; "Private IP addresses":
// "Azure reserves the first four addresses in each subnet address range").
// Addresses are bigints; their text is RFC 5952's (lower case, the longest
// run of zero groups shortened to `::`), as ARM writes them.

export interface Prefix6 {
  /** Canonical text, e.g. "fd00:10:240::/64". */
  text: string;
  network: bigint;
  /** Addresses in the block, reserved ones included (2^64). */
  size: bigint;
}

const GROUP = /^[0-9a-f]{1,4}$/i;

/** An IPv6 address as a bigint; undefined for anything else (IPv4, zones, embedded IPv4). */
export function toBig6(ip: string): bigint | undefined {
  if (typeof ip !== 'string' || !ip.includes(':')) return undefined;
  const halves = ip.split('::');
  if (halves.length > 2) return undefined;
  const part = (s: string): string[] | undefined => {
    if (s === '') return [];
    const groups = s.split(':');
    return groups.every((g) => GROUP.test(g)) ? groups : undefined;
  };
  const head = part(halves[0]!);
  const tail = halves.length === 2 ? part(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  return groups.reduce((v, g) => (v << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** RFC 5952 text of a 128-bit value. */
export function toText6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) =>
    Number((value >> BigInt(16 * (7 - i))) & 0xffffn),
  );
  // The longest run of two or more zero groups (the first of equals) becomes "::".
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len && j - i >= 2) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  const left = hex.slice(0, best.at).join(':');
  const right = hex.slice(best.at + best.len).join(':');
  return `${left}::${right}`;
}

/** The canonical text of an IPv6 address, or undefined when it is not one. */
export function canonical6(ip: string): string | undefined {
  const v = toBig6(ip);
  return v === undefined ? undefined : toText6(v);
}

/** Parses "x::/64" (host bits clear); throws for anything else, a /64 being Azure's only size. */
export function parsePrefix6(text: string): Prefix6 {
  const [address = '', bits = ''] = text.split('/');
  const network = toBig6(address);
  if (network === undefined || bits !== '64') {
    throw new Error(`invalid IPv6 address prefix "${text}" (Azure's IPv6 subnets are /64)`);
  }
  const size = 1n << 64n;
  if (network % size !== 0n) throw new Error(`invalid address prefix "${text}": host bits set`);
  return { text: `${toText6(network)}/64`, network, size };
}

/** The first address a Dynamic allocation may get (network + 4). */
export const firstHost6 = (p: Prefix6): bigint => p.network + 4n;
/** The last one (the block's last address is kept back too). */
export const lastHost6 = (p: Prefix6): bigint => p.network + p.size - 2n;
/** The gateway: network + 1. */
export const gatewayOf6 = (p: Prefix6): string => toText6(p.network + 1n);
/** Inside the block at all (reserved ones included). */
export const inPrefix6 = (p: Prefix6, value: bigint): boolean =>
  value >= p.network && value < p.network + p.size;
