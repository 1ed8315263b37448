// The address book of one subnet: which usable addresses are taken. A bitmap
// over the whole block (a /16 is 64 KiB) with a next-fit cursor, so an
// address that was just released is handed out again only after the rest of
// the subnet has been used: a node's sidecar gets time to forget an IP before
// another node receives it. Reserved addresses can never be marked or handed
// out. In the fulfiller the bitmap only mirrors the addresses in use
// (address-index.ts); it decides nothing alone. IPv6: pool6.ts.
import {
  contains,
  firstUsable,
  gatewayOf,
  intToIp,
  isUsable,
  lastUsable,
  tryIpToInt,
  usableCount,
} from './cidr.ts';
import type { Cidr } from './cidr.ts';

export class SubnetPool {
  readonly cidr: Cidr;
  private readonly used: Uint8Array;
  private usedCount = 0;
  private cursor: number;

  constructor(cidr: Cidr) {
    this.cidr = cidr;
    this.used = new Uint8Array(cidr.size);
    this.cursor = firstUsable(cidr);
  }

  get text(): string {
    return this.cidr.text;
  }

  get gateway(): string {
    return gatewayOf(this.cidr);
  }

  /** Addresses that may be handed out in total. */
  get capacity(): number {
    return usableCount(this.cidr);
  }

  get free(): number {
    return this.capacity - this.usedCount;
  }

  get inUse(): number {
    return this.usedCount;
  }

  /** True when the text is an address of this subnet (reserved included). */
  owns(ip: string): boolean {
    const v = tryIpToInt(ip);
    return v !== undefined && contains(this.cidr, v);
  }

  /** True when the text is an address of this subnet that may be handed out. */
  usable(ip: string): boolean {
    const v = tryIpToInt(ip);
    return v !== undefined && isUsable(this.cidr, v);
  }

  isUsed(ip: string): boolean {
    const v = tryIpToInt(ip);
    return v !== undefined && isUsable(this.cidr, v) && this.used[v - this.cidr.network] === 1;
  }

  /**
   * Records an address as taken (learned from an NNC status). Returns false
   * and changes nothing for addresses outside the usable range.
   */
  markUsed(ip: string): boolean {
    const v = tryIpToInt(ip);
    if (v === undefined || !isUsable(this.cidr, v)) return false;
    const i = v - this.cidr.network;
    if (this.used[i] === 0) {
      this.used[i] = 1;
      this.usedCount++;
    }
    return true;
  }

  /** Gives an address back; unknown or reserved addresses are ignored. */
  release(ip: string): void {
    const v = tryIpToInt(ip);
    if (v === undefined || !isUsable(this.cidr, v)) return;
    const i = v - this.cidr.network;
    if (this.used[i] === 1) {
      this.used[i] = 0;
      this.usedCount--;
    }
  }

  /**
   * Finds up to `count` free addresses, next-fit from the cursor, without
   * marking them: the caller claims them (the pool mirrors the ledger).
   * Returns fewer when the subnet runs out (possibly none); never a reserved
   * or used address, never one twice.
   */
  pick(count: number): string[] {
    const out: string[] = [];
    if (!(count > 0)) return out;
    const first = firstUsable(this.cidr);
    const last = lastUsable(this.cidr);
    const span = last - first + 1;
    const want = Math.min(count, this.free);
    let v = this.cursor;
    for (let scanned = 0; scanned < span && out.length < want; scanned++) {
      if (this.used[v - this.cidr.network] === 0) out.push(intToIp(v));
      v = v === last ? first : v + 1;
    }
    this.cursor = v;
    return out;
  }

  /** Takes up to `count` free addresses and marks them used (pick + markUsed). */
  allocate(count: number): string[] {
    const out = this.pick(count);
    for (const ip of out) this.markUsed(ip);
    return out;
  }
}
