// The address book of one IPv6 subnet: which usable addresses are taken,
// kept as the set of those in use, never a map of the range, so a /64 costs
// no more memory than a /112 (issue 54). A next-fit cursor, as the IPv4
// pool's (pool.ts): an address just released is handed out again only after
// the rest of the subnet. In the fulfiller it only mirrors the addresses in
// use (address-index.ts); it decides nothing alone.
import type { Cidr6 } from './cidr6.ts';
import {
  bigToIp6,
  contains6,
  firstUsable6,
  gatewayOf6,
  isUsable6,
  lastUsable6,
  tryIp6ToBig,
  usableCount6,
} from './cidr6.ts';

export class SparsePool {
  readonly cidr: Cidr6;
  private readonly used = new Set<bigint>();
  private cursor: bigint;

  constructor(cidr: Cidr6) {
    this.cidr = cidr;
    this.cursor = firstUsable6(cidr);
  }

  get text(): string {
    return this.cidr.text;
  }

  get gateway(): string {
    return gatewayOf6(this.cidr);
  }

  /** Addresses that may be handed out in total (a /64's 2^64 − 5 as the nearest number). */
  get capacity(): number {
    return Number(usableCount6(this.cidr));
  }

  get free(): number {
    return Number(usableCount6(this.cidr) - BigInt(this.used.size));
  }

  get inUse(): number {
    return this.used.size;
  }

  owns(ip: string): boolean {
    const v = tryIp6ToBig(ip);
    return v !== undefined && contains6(this.cidr, v);
  }

  usable(ip: string): boolean {
    const v = tryIp6ToBig(ip);
    return v !== undefined && isUsable6(this.cidr, v);
  }

  isUsed(ip: string): boolean {
    const v = tryIp6ToBig(ip);
    return v !== undefined && this.used.has(v);
  }

  markUsed(ip: string): boolean {
    const v = tryIp6ToBig(ip);
    if (v === undefined || !isUsable6(this.cidr, v)) return false;
    this.used.add(v);
    return true;
  }

  release(ip: string): void {
    const v = tryIp6ToBig(ip);
    if (v !== undefined) this.used.delete(v);
  }

  /**
   * Finds up to `count` free addresses, next-fit from the cursor, without
   * marking them. Each step finds a free address or passes a used one, so a
   * pick costs at most `count` plus the addresses in use.
   */
  pick(count: number): string[] {
    const out: string[] = [];
    if (!(count > 0)) return out;
    const first = firstUsable6(this.cidr);
    const last = lastUsable6(this.cidr);
    const want = BigInt(Math.min(count, this.free));
    let v = this.cursor;
    for (let steps = 0n, limit = want + BigInt(this.used.size); steps < limit; steps++) {
      if (BigInt(out.length) >= want) break;
      if (!this.used.has(v)) out.push(bigToIp6(v));
      v = v === last ? first : v + 1n;
    }
    this.cursor = v;
    return out;
  }

  /** Takes up to `count` free addresses and marks them used. */
  allocate(count: number): string[] {
    const out = this.pick(count);
    for (const ip of out) this.markUsed(ip);
    return out;
  }
}
