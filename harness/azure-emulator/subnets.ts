// The emulator's virtual networks and their subnets' address books. Dynamic
// addresses are handed out as Azure documents it: never the first four
// addresses of a subnet (network, gateway, two DNS) nor the last (broadcast),
// and the lowest free one first: "Azure assigns the next available
// unassigned or unreserved IP address in the subnet's address range" (its
// example: 10.0.0.10 when 10.0.0.4-10.0.0.9 are taken; learn.microsoft.com/
// azure/virtual-network/ip-services/private-ip-addresses#allocation-method).
// So an address ARM frees is the next one it hands out. A hint at the lowest
// address that may be free keeps allocation O(1) amortised at 30,000.
import { parseSubnetId } from '../../src/azure/arm/ids.ts';
import type { Cidr } from '../../src/fulfiller/cidr.ts';
import {
  firstUsable,
  gatewayOf,
  intToIp,
  ipToInt,
  isUsable,
  lastUsable,
  parseCidr,
  usableCount,
} from '../../src/fulfiller/cidr.ts';

export class EmulatedSubnet {
  readonly id: string;
  readonly name: string;
  readonly addressPrefix: string;
  readonly cidr: Cidr;
  private readonly used = new Set<number>();
  /** No address below this one is free. */
  private lowestFree: number;

  constructor(id: string, name: string, addressPrefix: string) {
    this.id = id;
    this.name = name;
    this.cidr = parseCidr(addressPrefix);
    this.addressPrefix = this.cidr.text;
    this.lowestFree = firstUsable(this.cidr);
  }

  get gateway(): string {
    return gatewayOf(this.cidr);
  }

  /** Addresses that may ever be handed out (the usage API's `limit`). */
  get limit(): number {
    return usableCount(this.cidr);
  }

  /** Addresses held by ipConfigurations (the usage API's `currentValue`). */
  get inUse(): number {
    return this.used.size;
  }

  get free(): number {
    return this.limit - this.used.size;
  }

  /** Takes the lowest free address; undefined when the subnet is full. */
  allocate(): string | undefined {
    if (this.free <= 0) return undefined;
    const last = lastUsable(this.cidr);
    for (let value = this.lowestFree; value <= last; value++) {
      if (!this.used.has(value)) {
        this.used.add(value);
        this.lowestFree = value + 1;
        return intToIp(value);
      }
    }
    return undefined;
  }

  /** Takes one given address (Static allocation); false when taken or outside. */
  take(ip: string): boolean {
    const value = ipToInt(ip);
    if (!isUsable(this.cidr, value) || this.used.has(value)) return false;
    this.used.add(value);
    return true;
  }

  release(ip: string): void {
    const value = ipToInt(ip);
    if (this.used.delete(value) && value < this.lowestFree) this.lowestFree = value;
  }

  holds(ip: string): boolean {
    return this.used.has(ipToInt(ip));
  }

  /** The subnet resource as ARM returns it (without the ipConfigurations back-references). */
  toArm(etag: string): Record<string, unknown> {
    return {
      id: this.id,
      name: this.name,
      etag,
      type: 'Microsoft.Network/virtualNetworks/subnets',
      properties: { addressPrefix: this.addressPrefix, provisioningState: 'Succeeded' },
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

  /** Adds a virtual network; returns the subnet ids by name. */
  add(
    resourceGroup: string,
    name: string,
    subnets: Record<string, string>,
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
      const ref = parseSubnetId(s.id);
      return (
        ref.resourceGroup.toLowerCase() === resourceGroup.toLowerCase() &&
        ref.virtualNetwork.toLowerCase() === virtualNetwork.toLowerCase()
      );
    });
  }

  /** Addresses in use in a virtual network (every subnet of it). */
  vnetInUse(subnetId: string): { name: string; inUse: number } {
    const ref = parseSubnetId(subnetId);
    const inUse = this.subnetsOf(ref.resourceGroup, ref.virtualNetwork).reduce(
      (n, s) => n + s.inUse,
      0,
    );
    return { name: ref.virtualNetwork, inUse };
  }
}
