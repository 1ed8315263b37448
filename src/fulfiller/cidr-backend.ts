// The CIDR backend: allocates pod IPs from local subnets, one per address
// family (`--subnet` once for IPv4, once for IPv6, or once for either:
// docs/design/contracts.md, "Address families"). It keeps no record of its
// own: an address is in use exactly when some node record holds it (an NNC
// status, a write in doubt, a quarantine: node-book.ts), and its pools only
// mirror that index, so a restarted or newly elected fulfiller knows every
// address handed out from the NNCs alone. Each node's container of a family
// gets its own primary IP from that family's subnet, as in an Azure VNet.
// Releasing is nothing to do here: an address comes free when the NNC
// status without it is read.
import { randomUUID } from 'node:crypto';
import type { IpFamily } from '../nnc/family.ts';
import { addressFamily, cidrFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type {
  ApplyResult,
  BackendContext,
  FamilyChange,
  HeldContainer,
  IpBackend,
  NodeRef,
  PoolChange,
  SubnetInfo,
} from './backend.ts';
import { SubnetFullError } from './backend.ts';
import { parseCidr } from './cidr.ts';
import { subnetsByFamily } from './families.ts';
import { parseCidr6 } from './cidr6.ts';
import { SubnetPool } from './pool.ts';
import { SparsePool } from './pool6.ts';
import { containerFrom } from './status.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface CidrBackendOptions {
  /** Pod subnet, e.g. "10.240.0.0/16" (one family). */
  cidr?: string;
  /** Pod subnets, at most one per family (dual-stack: one IPv4, one IPv6). */
  cidrs?: string[];
  /** Subnet (and CSS) name of the first subnet; derived from the CIDR when absent. */
  subnetName?: string;
  /** Names new IP ids (a uuid each by default). */
  newId?: () => string;
}

/** A DNS-1123 name for a subnet: "subnet-10-240-0-0-16", "subnet-fd00-10-240--112". */
export function defaultSubnetName(cidr: string): string {
  return `subnet-${cidr.replace(/[./:]/g, '-')}`;
}

/** A subnet's text as a pool of its family (IPv4: a bitmap; IPv6: the addresses in use only). */
export function poolOf(cidr: string): SubnetPool | SparsePool {
  return cidrFamily(cidr) === 6
    ? new SparsePool(parseCidr6(cidr))
    : new SubnetPool(parseCidr(cidr));
}

interface FamilyPool {
  family: IpFamily;
  pool: SubnetPool | SparsePool;
  name: string;
}

export class CidrBackend implements IpBackend {
  readonly kind = 'cidr';
  private readonly pools: FamilyPool[];
  private readonly newId: () => string;
  private readonly uuidIds: boolean;

  constructor(options: CidrBackendOptions, addresses: BackendContext['addresses']) {
    const cidrs = options.cidrs ?? (options.cidr !== undefined ? [options.cidr] : []);
    this.pools = subnetsByFamily(cidrs).map(([family, cidr], i) => {
      const pool = poolOf(cidr);
      const name =
        i === 0 && options.subnetName ? options.subnetName : defaultSubnetName(pool.text);
      return { family, pool, name };
    });
    this.newId = options.newId ?? randomUUID;
    this.uuidIds = options.newId === undefined;
    for (const ip of addresses.used()) this.poolFor(ip)?.markUsed(ip);
    addresses.subscribe((ip, used) => {
      if (used) this.poolFor(ip)?.markUsed(ip);
      else this.poolFor(ip)?.release(ip);
    });
  }

  /** The first family's pool (the only one of a single-stack backend). */
  get pool(): SubnetPool | SparsePool {
    return this.pools[0]!.pool;
  }

  /** The first family's subnet name. */
  get subnetName(): string {
    return this.pools[0]!.name;
  }

  families(): IpFamily[] {
    return this.pools.map((p) => p.family);
  }

  subnets(): SubnetInfo[] {
    return this.pools.map(({ family, pool, name }) => ({
      name,
      family,
      cidr: pool.text,
      defaultGateway: pool.gateway,
      capacity: pool.capacity,
      free: pool.free,
    }));
  }

  /**
   * Picks and holds addresses in one synchronous step (no other round can
   * pick them in between), in every family; the fulfiller ties them to its
   * status write.
   */
  async apply(_node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    let short = false;
    const held = change.families.map((f) => {
      const fp = this.pools.find((p) => p.family === f.family);
      if (!fp) throw new Error(`no IPv${f.family} subnet`);
      const container = this.heldOf(fp, f, change);
      const ips = fp.pool.pick(Math.max(0, f.add));
      change.hold?.(ips);
      for (const ip of ips) container.ipAssignments.push({ name: this.newId(), ip });
      short ||= ips.length < f.add;
      return container;
    });
    return { held, short };
  }

  /** Its ids are UUIDs (unless a test named them otherwise). */
  validId(id: string): boolean {
    return !this.uuidIds || UUID.test(id);
  }

  /** A usable address of one of its subnets (not the network, broadcast or reserved ones). */
  validAddress(ip: string): boolean {
    return this.poolFor(ip)?.usable(ip) ?? false;
  }

  /**
   * The rescued addresses, a container per family under a fresh primary (one
   * the pool has free and the pods do not hold), each with a new id; nothing
   * is held here: the fulfiller keeps the containers in the node's record.
   */
  rebuild(_node: NodeRef, ips: readonly string[]): NetworkContainer[] | undefined {
    const out: NetworkContainer[] = [];
    for (const fp of this.pools) {
      const mine = ips.filter((ip) => addressFamily(ip) === fp.family);
      if (mine.length === 0) continue;
      const rescued = new Set(mine);
      const primaryIP = fp.pool.pick(mine.length + 1).find((ip) => !rescued.has(ip));
      if (primaryIP === undefined) return undefined;
      const held = this.heldFrom(fp, { id: '', primaryIP });
      held.ipAssignments = mine.map((ip) => ({ name: this.newId(), ip }));
      out.push(containerFrom({ held, newId: this.newId }));
    }
    return out;
  }

  /** Nothing to call: the node's addresses come free when its NNC is gone. */
  async releaseAll(_node: NodeRef, _containers: readonly NetworkContainer[]): Promise<void> {}

  private poolFor(ip: string): SubnetPool | SparsePool | undefined {
    const family = addressFamily(ip);
    return this.pools.find((p) => p.family === family && p.pool.owns(ip))?.pool;
  }

  /** The family's container as held now, less what the node released; a new one when it has none. */
  private heldOf(fp: FamilyPool, f: FamilyChange, change: PoolChange): HeldContainer {
    if (!f.container) {
      const [primaryIP] = fp.pool.pick(1);
      if (primaryIP === undefined)
        throw new SubnetFullError(`subnet ${fp.name} has no free address for a primary IP`);
      change.hold?.([primaryIP]);
      return { ...this.heldFrom(fp, { id: '', primaryIP }), ipAssignments: [] };
    }
    const held = this.heldFrom(fp, f.container);
    const gone = new Set(f.remove.map((a) => a.name));
    held.ipAssignments = held.ipAssignments.filter((a) => !gone.has(a.name));
    return held;
  }

  private heldFrom(fp: FamilyPool, nc: NetworkContainer): HeldContainer {
    return {
      primaryIP: nc.primaryIP ?? '',
      subnetName: nc.subnetName ?? fp.name,
      subnetAddressSpace: nc.subnetAddressSpace ?? fp.pool.text,
      defaultGateway: nc.defaultGateway ?? fp.pool.gateway,
      type: nc.type ?? 'vnet',
      ipAssignments: (Array.isArray(nc.ipAssignments) ? nc.ipAssignments : []).map((a) => ({
        name: a.name,
        ip: a.ip,
      })),
    };
  }
}
