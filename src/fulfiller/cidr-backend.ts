// The CIDR backend: allocates pod IPs from one local subnet. It keeps no
// state of its own on disk: the NNC statuses are the record. On start the
// fulfiller feeds it every NNC (`observe`) before allocating anything, so a
// restarted fulfiller rebuilds exactly what was handed out and never gives an
// address twice. Each node's container gets its own primary IP from the same
// subnet, as in an Azure VNet.
import type { NetworkContainer } from '../nnc/types.ts';
import type { ContainerSetup, IpBackend, SubnetInfo } from './backend.ts';
import { SubnetFullError } from './backend.ts';
import { gatewayOf, parseCidr } from './cidr.ts';
import { SubnetPool } from './pool.ts';

export interface CidrBackendOptions {
  /** Pod subnet, e.g. "10.240.0.0/16". */
  cidr: string;
  /** Subnet (and CSS) name; derived from the CIDR when absent. */
  subnetName?: string;
}

/** A DNS-1123 name for a subnet: "subnet-10-240-0-0-16". */
export function defaultSubnetName(cidr: string): string {
  return `subnet-${cidr.replace(/[./]/g, '-')}`;
}

export class CidrBackend implements IpBackend {
  readonly kind = 'cidr';
  readonly pool: SubnetPool;
  readonly subnetName: string;
  private readonly gateway: string;

  constructor(options: CidrBackendOptions) {
    const cidr = parseCidr(options.cidr);
    this.pool = new SubnetPool(cidr);
    this.subnetName = options.subnetName ?? defaultSubnetName(cidr.text);
    this.gateway = gatewayOf(cidr);
  }

  subnets(): SubnetInfo[] {
    return [
      {
        name: this.subnetName,
        cidr: this.pool.cidr.text,
        defaultGateway: this.gateway,
        capacity: this.pool.capacity,
        free: this.pool.free,
      },
    ];
  }

  /** Every address of a container this backend could own: primary and secondaries. */
  private addressesOf(containers: NetworkContainer[]): string[] {
    const out: string[] = [];
    for (const nc of containers) {
      if (typeof nc?.primaryIP === 'string') out.push(nc.primaryIP);
      for (const a of Array.isArray(nc?.ipAssignments) ? nc.ipAssignments : []) {
        if (typeof a?.ip === 'string') out.push(a.ip);
      }
    }
    return out.filter((ip) => this.pool.owns(ip));
  }

  observe(_node: string, containers: NetworkContainer[]): void {
    for (const ip of this.addressesOf(containers)) this.pool.markUsed(ip);
  }

  async forget(_node: string, containers: NetworkContainer[]): Promise<void> {
    for (const ip of this.addressesOf(containers)) this.pool.release(ip);
  }

  async setupContainer(_node: string): Promise<ContainerSetup> {
    const [primaryIP] = this.pool.allocate(1);
    if (primaryIP === undefined)
      throw new SubnetFullError(`subnet ${this.subnetName} has no free address for a primary IP`);
    return {
      primaryIP,
      subnetName: this.subnetName,
      subnetAddressSpace: this.pool.cidr.text,
      defaultGateway: this.gateway,
      type: 'vnet',
    };
  }

  async teardownContainer(_node: string, setup: ContainerSetup): Promise<void> {
    this.pool.release(setup.primaryIP);
  }

  async allocate(_node: string, _nc: NetworkContainer, count: number): Promise<string[]> {
    return this.pool.allocate(count);
  }

  async release(_node: string, _nc: NetworkContainer, ips: string[]): Promise<void> {
    for (const ip of ips) this.pool.release(ip);
  }
}
