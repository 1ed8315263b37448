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

/** Why a Static address cannot be taken: held by another ipConfiguration, reserved, or outside. */
export type TakeRefusal = 'allocated' | 'reserved' | 'outside';

export class EmulatedSubnet {
  readonly id: string;
  readonly name: string;
  readonly addressPrefix: string;
  readonly prefix: Prefix;
  private readonly used = new Set<number>();
  /** No address below this one is free. */
  private lowestFree: number;

  constructor(id: string, name: string, addressPrefix: string) {
    this.id = id;
    this.name = name;
    this.prefix = parsePrefix(addressPrefix);
    this.addressPrefix = this.prefix.text;
    this.lowestFree = firstHost(this.prefix);
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

  /** Takes the lowest free address; undefined when the subnet is full. */
  allocate(): string | undefined {
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

  /** Takes one given address (Static allocation); why not, when it cannot. */
  take(ip: string): TakeRefusal | undefined {
    const value = toInt(ip);
    if (value === undefined || !inPrefix(this.prefix, value)) return 'outside';
    if (value < firstHost(this.prefix) || value > lastHost(this.prefix)) return 'reserved';
    if (this.used.has(value)) return 'allocated';
    this.used.add(value);
    return undefined;
  }

  release(ip: string): void {
    const value = toInt(ip);
    if (value === undefined) return;
    if (this.used.delete(value) && value < this.lowestFree) this.lowestFree = value;
  }

  holds(ip: string): boolean {
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
      const ref = subnetParts(s.id);
      return (
        ref?.resourceGroup.toLowerCase() === resourceGroup.toLowerCase() &&
        ref.virtualNetwork.toLowerCase() === virtualNetwork.toLowerCase()
      );
    });
  }

  /** Addresses in use in a virtual network (every subnet of it). */
  vnetInUse(subnetId: string): { name: string; inUse: number } {
    const ref = subnetParts(subnetId);
    if (!ref) throw new Error(`not a subnet id: ${subnetId}`);
    const inUse = this.subnetsOf(ref.resourceGroup, ref.virtualNetwork).reduce(
      (n, s) => n + s.inUse,
      0,
    );
    return { name: ref.virtualNetwork, inUse };
  }
}
