// The emulator's virtual networks and their subnets' address books. Dynamic
// addresses are handed out as Azure documents it: never the first four
// addresses of a subnet (network, gateway, two DNS) nor the last (broadcast),
// and the lowest free one first: "Azure assigns the next available
// unassigned or unreserved IP address in the subnet's address range" (its
// example: 10.0.0.10 when 10.0.0.4-10.0.0.9 are taken; learn.microsoft.com/
// azure/virtual-network/ip-services/private-ip-addresses#allocation-method).
// So an address ARM frees is the next one it hands out. A hint at the lowest
// address that may be free keeps allocation O(1) amortised at 30,000. The
// address arithmetic is the emulator's own (ipv4.ts).
import { subnetParts } from './arm-ids.ts';
import type { Prefix } from './ipv4.ts';
import {
  firstHost,
  gatewayOf,
  hostCount,
  inPrefix,
  lastHost,
  parsePrefix,
  toInt,
  toQuad,
} from './ipv4.ts';
import type { Prefix6 } from './ipv6.ts';
import {
  firstHost6,
  gatewayOf6,
  inPrefix6,
  lastHost6,
  parsePrefix6,
  toBig6,
  toText6,
} from './ipv6.ts';

/** Why a Static address cannot be taken: held by another ipConfiguration, reserved, or outside. */
export type TakeRefusal = 'allocated' | 'reserved' | 'outside';

export class EmulatedSubnet {
  readonly id: string;
  readonly name: string;
  /** The IPv4 prefix. */
  readonly addressPrefix: string;
  readonly prefix: Prefix;
  /** The IPv6 prefix of a dual-stack subnet. */
  readonly prefix6: Prefix6 | undefined;
  private readonly used = new Set<number>();
  /** No address below this one is free. */
  private lowestFree: number;
  private readonly used6 = new Set<bigint>();
  private lowestFree6: bigint;

  /** `addressPrefix`: the IPv4 prefix, or it and an IPv6 /64 (dual-stack). */
  constructor(id: string, name: string, addressPrefix: string | string[]) {
    this.id = id;
    this.name = name;
    const prefixes = Array.isArray(addressPrefix) ? addressPrefix : [addressPrefix];
    const v4 = prefixes.filter((p) => !p.includes(':'));
    const v6 = prefixes.filter((p) => p.includes(':'));
    if (v4.length !== 1 || v6.length > 1) {
      throw new Error(
        `subnet ${name}: one IPv4 prefix and at most one IPv6 prefix, got ${prefixes.join(', ')}`,
      );
    }
    this.prefix = parsePrefix(v4[0]!);
    this.addressPrefix = this.prefix.text;
    this.lowestFree = firstHost(this.prefix);
    this.prefix6 = v6[0] !== undefined ? parsePrefix6(v6[0]) : undefined;
    this.lowestFree6 = this.prefix6 ? firstHost6(this.prefix6) : 0n;
  }

  /** Its prefixes as ARM lists them: the IPv4 one, then the IPv6 one. */
  get addressPrefixes(): string[] {
    return this.prefix6 ? [this.addressPrefix, this.prefix6.text] : [this.addressPrefix];
  }

  /** The IPv6 gateway (network + 1); undefined without an IPv6 prefix. */
  get gateway6(): string | undefined {
    return this.prefix6 ? gatewayOf6(this.prefix6) : undefined;
  }

  /** IPv6 addresses held by ipConfigurations. */
  get inUse6(): number {
    return this.used6.size;
  }

  get gateway(): string {
    return gatewayOf(this.prefix);
  }

  /** Addresses that may ever be handed out (the usage API's `limit`). */
  get limit(): number {
    return hostCount(this.prefix);
  }

  /** Addresses held by ipConfigurations (the usage API's `currentValue`). */
  get inUse(): number {
    return this.used.size;
  }

  get free(): number {
    return this.limit - this.used.size;
  }

  /** Takes the lowest free address of a family; undefined when the subnet (or its IPv6 prefix) is full. */
  allocate(family: 4 | 6 = 4): string | undefined {
    if (family === 6) return this.allocate6();
    if (this.free <= 0) return undefined;
    const last = lastHost(this.prefix);
    for (let value = this.lowestFree; value <= last; value++) {
      if (!this.used.has(value)) {
        this.used.add(value);
        this.lowestFree = value + 1;
        return toQuad(value);
      }
    }
    return undefined;
  }

  private allocate6(): string | undefined {
    const p = this.prefix6;
    if (!p) return undefined;
    const last = lastHost6(p);
    for (let value = this.lowestFree6; value <= last; value++) {
      if (!this.used6.has(value)) {
        this.used6.add(value);
        this.lowestFree6 = value + 1n;
        return toText6(value);
      }
    }
    return undefined;
  }

  /**
   * Takes one given address (Static allocation) of a family; why not, when
   * it cannot (an address of the other family, or no IPv6 prefix: outside).
   */
  take(ip: string, family: 4 | 6 = 4): TakeRefusal | undefined {
    if (family === 6) return this.take6(ip);
    const value = toInt(ip);
    if (value === undefined || !inPrefix(this.prefix, value)) return 'outside';
    if (value < firstHost(this.prefix) || value > lastHost(this.prefix)) return 'reserved';
    if (this.used.has(value)) return 'allocated';
    this.used.add(value);
    return undefined;
  }

  private take6(ip: string): TakeRefusal | undefined {
    const p = this.prefix6;
    const value = toBig6(ip);
    if (!p || value === undefined || !inPrefix6(p, value)) return 'outside';
    if (value < firstHost6(p) || value > lastHost6(p)) return 'reserved';
    if (this.used6.has(value)) return 'allocated';
    this.used6.add(value);
    return undefined;
  }

  release(ip: string): void {
    const v6 = toBig6(ip);
    if (v6 !== undefined) {
      if (this.used6.delete(v6) && v6 < this.lowestFree6) this.lowestFree6 = v6;
      return;
    }
    const value = toInt(ip);
    if (value === undefined) return;
    if (this.used.delete(value) && value < this.lowestFree) this.lowestFree = value;
  }

  holds(ip: string): boolean {
    const v6 = toBig6(ip);
    if (v6 !== undefined) return this.used6.has(v6);
    const value = toInt(ip);
    return value !== undefined && this.used.has(value);
  }

  /** The subnet resource as ARM returns it (without the ipConfigurations back-references). */
  toArm(etag: string): Record<string, unknown> {
    return {
      id: this.id,
      name: this.name,
      etag,
      type: 'Microsoft.Network/virtualNetworks/subnets',
      // One prefix: `addressPrefix`; a dual-stack subnet's: `addressPrefixes`
      // (the REST API's Subnet has both; a subnet made with several, as
      // `az network vnet subnet create --address-prefixes` makes it, has the list).
      properties: {
        ...(this.prefix6
          ? { addressPrefixes: this.addressPrefixes }
          : { addressPrefix: this.addressPrefix }),
        provisioningState: 'Succeeded',
      },
    };
  }
}

/** The virtual networks' subnets, by id (ARM ids compare case-insensitively). */
export class VirtualNetworks {
  private readonly subscriptionId: string;
  private readonly subnets = new Map<string, EmulatedSubnet>();

  constructor(subscriptionId: string) {
    this.subscriptionId = subscriptionId;
  }

  /** Adds a virtual network; returns the subnet ids by name (a subnet: its prefix, or its two). */
  add(
    resourceGroup: string,
    name: string,
    subnets: Record<string, string | string[]>,
  ): Record<string, string> {
    const ids: Record<string, string> = {};
    for (const [subnet, prefix] of Object.entries(subnets)) {
      const id = `/subscriptions/${this.subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Network/virtualNetworks/${name}/subnets/${subnet}`;
      this.subnets.set(id.toLowerCase(), new EmulatedSubnet(id, subnet, prefix));
      ids[subnet] = id;
    }
    return ids;
  }

  subnet(id: string): EmulatedSubnet | undefined {
    return this.subnets.get(id.replace(/\/$/, '').toLowerCase());
  }

  /** Every subnet of one virtual network. */
  subnetsOf(resourceGroup: string, virtualNetwork: string): EmulatedSubnet[] {
    return [...this.subnets.values()].filter((s) => {
      const ref = subnetParts(s.id);
      return (
        ref?.resourceGroup.toLowerCase() === resourceGroup.toLowerCase() &&
        ref.virtualNetwork.toLowerCase() === virtualNetwork.toLowerCase()
      );
    });
  }

  /**
   * Private addresses in use in a virtual network (every subnet of it, both
   * families: the cap names private IP addresses, whatever their family).
   */
  vnetInUse(subnetId: string): { name: string; inUse: number } {
    const ref = subnetParts(subnetId);
    if (!ref) throw new Error(`not a subnet id: ${subnetId}`);
    const inUse = this.subnetsOf(ref.resourceGroup, ref.virtualNetwork).reduce(
      (n, s) => n + s.inUse + s.inUse6,
      0,
    );
    return { name: ref.virtualNetwork, inUse };
  }
}
