// The CIDR backend: allocates pod IPs from one local subnet. It keeps no
// record of its own: an address is in use exactly when some node record holds
// it (an NNC status, a write in doubt, a quarantine: node-book.ts), and its
// bitmap only mirrors that index, so a restarted
// or newly elected fulfiller knows every address handed out from the NNCs
// alone. Each node's container gets its own primary IP from the same subnet,
// as in an Azure VNet. Releasing is nothing to do here: an address comes free
// when the NNC status without it is read.
import { randomUUID } from 'node:crypto';
import type { NetworkContainer } from '../nnc/types.ts';
import type {
  ApplyResult,
  BackendContext,
  HeldContainer,
  IpBackend,
  NodeRef,
  PoolChange,
  SubnetInfo,
} from './backend.ts';
import { SubnetFullError } from './backend.ts';
import { gatewayOf, parseCidr } from './cidr.ts';
import { SubnetPool } from './pool.ts';
import { containerFrom } from './status.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface CidrBackendOptions {
  /** Pod subnet, e.g. "10.240.0.0/16". */
  cidr: string;
  /** Subnet (and CSS) name; derived from the CIDR when absent. */
  subnetName?: string;
  /** Names new IP ids (a uuid each by default). */
  newId?: () => string;
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
  private readonly newId: () => string;
  private readonly uuidIds: boolean;

  constructor(options: CidrBackendOptions, addresses: BackendContext['addresses']) {
    const cidr = parseCidr(options.cidr);
    this.pool = new SubnetPool(cidr);
    this.subnetName = options.subnetName ?? defaultSubnetName(cidr.text);
    this.gateway = gatewayOf(cidr);
    this.newId = options.newId ?? randomUUID;
    this.uuidIds = options.newId === undefined;
    for (const ip of addresses.used()) this.pool.markUsed(ip);
    addresses.subscribe((ip, used) => {
      if (used) this.pool.markUsed(ip);
      else this.pool.release(ip);
    });
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

  /**
   * Picks and claims addresses in one synchronous step (no other round can
   * pick them in between); the fulfiller ties the claims to its status write.
   */
  async apply(node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    const held = change.container ? this.heldFrom(change.container) : this.newContainer(change);
    const gone = new Set(change.remove.map((a) => a.name));
    held.ipAssignments = held.ipAssignments.filter((a) => !gone.has(a.name));
    const ips = this.pool.pick(Math.max(0, change.add));
    change.hold?.(ips);
    for (const ip of ips) held.ipAssignments.push({ name: this.newId(), ip });
    return { held, short: ips.length < change.add };
  }

  /** Its ids are UUIDs (unless a test named them otherwise). */
  validId(id: string): boolean {
    return !this.uuidIds || UUID.test(id);
  }

  /** A usable address of its subnet (not the network, broadcast or reserved ones). */
  validAddress(ip: string): boolean {
    return this.pool.usable(ip);
  }

  /**
   * The rescued addresses under a fresh primary (one the pool has free and
   * the pods do not hold), each with a new id; nothing is claimed here: the
   * fulfiller keeps the container in its node record at once.
   */
  rebuild(_node: NodeRef, ips: readonly string[]): NetworkContainer | undefined {
    const rescued = new Set(ips);
    const primaryIP = this.pool.pick(ips.length + 1).find((ip) => !rescued.has(ip));
    if (primaryIP === undefined) return undefined;
    const held = this.heldFrom({ id: '', primaryIP });
    held.ipAssignments = ips.map((ip) => ({ name: this.newId(), ip }));
    return containerFrom({ held, newId: this.newId });
  }

  /** Nothing to call: the node's addresses come free when its NNC is gone. */
  async releaseAll(_node: NodeRef, _container: NetworkContainer | undefined): Promise<void> {}

  private newContainer(change: PoolChange): HeldContainer {
    const [primaryIP] = this.pool.pick(1);
    if (primaryIP === undefined)
      throw new SubnetFullError(`subnet ${this.subnetName} has no free address for a primary IP`);
    change.hold?.([primaryIP]);
    return {
      primaryIP,
      subnetName: this.subnetName,
      subnetAddressSpace: this.pool.cidr.text,
      defaultGateway: this.gateway,
      type: 'vnet',
      ipAssignments: [],
    };
  }

  private heldFrom(nc: NetworkContainer): HeldContainer {
    return {
      primaryIP: nc.primaryIP ?? '',
      subnetName: nc.subnetName ?? this.subnetName,
      subnetAddressSpace: nc.subnetAddressSpace ?? this.pool.cidr.text,
      defaultGateway: nc.defaultGateway ?? this.gateway,
      type: nc.type ?? 'vnet',
      ipAssignments: (Array.isArray(nc.ipAssignments) ? nc.ipAssignments : []).map((a) => ({
        name: a.name,
        ip: a.ip,
      })),
    };
  }
}
