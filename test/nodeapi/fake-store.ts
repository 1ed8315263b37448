// A small in-memory NodeIpStore for the node API's unit tests: the same
// contract as the real store (idempotent assign per podInterfaceID, release
// keeps PendingRelease, all-or-nothing marking), no durability, and one
// address family (IPv4): dual-stack is tested against the real store
// (sqlite.integration.test.ts).
import {
  IP_STATES,
  InsufficientReleasableError,
  NoAvailableIpError,
} from '../../src/ipstore/types.ts';
import type {
  AdoptRequest,
  AdoptResult,
  AssignRequest,
  Assignment,
  FamilyCounts,
  Holder,
  ContainerInfo,
  InventoryChange,
  IpRecord,
  IpState,
  NodeIpStore,
  PoolView,
  Released,
  StateCounts,
} from '../../src/ipstore/types.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';

export const NC: ContainerInfo = {
  id: 'nc-1',
  subnetAddressSpace: '10.240.0.0/16',
  defaultGateway: '10.240.0.1',
  primaryIP: '10.240.0.4',
};

export class FakeStore implements NodeIpStore {
  readonly records = new Map<string, IpRecord>();
  readonly containers = new Map<string, ContainerInfo>([[NC.id, NC]]);
  clock = 0;

  /** A store holding `n` Available IPs 10.240.1.0 .. in container nc-1. */
  static withIps(n: number): FakeStore {
    const s = new FakeStore();
    for (let i = 0; i < n; i++) {
      const id = `ip-${String(i).padStart(3, '0')}`;
      s.records.set(id, {
        id,
        ip: `10.240.${1 + Math.floor(i / 256)}.${i % 256}`,
        ncId: NC.id,
        state: 'Available',
        updatedAt: 0,
      });
    }
    return s;
  }

  /** A deep copy of every record, to compare before and after. */
  snapshot(): IpRecord[] {
    return structuredClone([...this.records.values()]);
  }

  syncInventory(_containers: NetworkContainer[]): InventoryChange {
    return { added: [], removed: [], assignedVanished: [] };
  }

  restorePendingRelease(ids: string[]): void {
    for (const id of ids) {
      const r = this.records.get(id);
      if (r && r.state !== 'Assigned') r.state = 'PendingRelease';
    }
  }

  markPendingRelease(count: number): string[] {
    const order: IpState[] = ['PendingProgramming', 'Available'];
    const pick = order.flatMap((st) => [...this.records.values()].filter((r) => r.state === st));
    if (pick.length < count) throw new InsufficientReleasableError(count, pick.length);
    const ids = pick.slice(0, count).map((r) => r.id);
    for (const id of ids) this.set(id, 'PendingRelease');
    return ids;
  }

  pendingReleaseIds(): string[] {
    return this.list(['PendingRelease'])
      .map((r) => r.id)
      .sort();
  }

  poolView(): PoolView {
    const all = this.list();
    const markable = all.filter((r) => r.state === 'Available' || r.state === 'PendingProgramming');
    const backedAssigned = all.filter((r) => r.state === 'Assigned' && r.vanished !== true);
    return {
      pendingReleaseIds: this.pendingReleaseIds(),
      activeCount: markable.length + backedAssigned.length,
      markableCount: markable.length,
    };
  }

  /** This store keeps no pool history. */
  poolHistory(): undefined {
    return undefined;
  }

  assign(request: AssignRequest): Assignment {
    const held = [...this.records.values()].find(
      (r) => r.pod?.podInterfaceID === request.podInterfaceID,
    );
    if (held) return one(held);
    const wanted = request.desiredIPAddresses ?? [];
    const free = [...this.records.values()].find(
      (r) => r.state === 'Available' && (wanted.length === 0 || wanted.includes(r.ip)),
    );
    if (!free) throw new NoAvailableIpError('no Available IP in the pool');
    free.state = 'Assigned';
    free.pod = {
      podInterfaceID: request.podInterfaceID,
      infraContainerID: request.infraContainerID,
      podName: request.podName,
      podNamespace: request.podNamespace,
    };
    free.updatedAt = ++this.clock;
    return one(free);
  }

  release(podInterfaceID: string): Released | undefined {
    const held = [...this.records.values()].find((r) => r.pod?.podInterfaceID === podInterfaceID);
    if (!held) return undefined;
    delete held.pod;
    if (held.state === 'Assigned') held.state = 'Available';
    held.updatedAt = ++this.clock;
    return one(held);
  }

  reclaim(id: string, holder: Holder): Released | undefined {
    const r = this.records.get(id);
    if (
      r?.pod?.podInterfaceID !== holder.podInterfaceID ||
      r.pod.infraContainerID !== holder.infraContainerID
    )
      return undefined;
    return this.release(holder.podInterfaceID);
  }

  adopt(request: AdoptRequest): AdoptResult {
    const r = [...this.records.values()].find((x) => x.ip === request.ip);
    if (!r) return { outcome: 'unknown' };
    if (r.pod) {
      const same = r.pod.podName === request.podName && r.pod.podNamespace === request.podNamespace;
      if (same) return { outcome: 'held', record: structuredClone(r) };
      if (request.from?.podInterfaceID !== r.pod.podInterfaceID)
        return { outcome: 'conflict', record: structuredClone(r) };
    }
    const previous = structuredClone(r);
    r.state = 'Assigned';
    r.pod = {
      podInterfaceID: `adopted:${request.podNamespace}/${request.podName}/${r.ip}`,
      infraContainerID: 'adopted',
      podName: request.podName,
      podNamespace: request.podNamespace,
    };
    r.updatedAt = ++this.clock;
    return { outcome: 'adopted', record: structuredClone(r), previous };
  }

  list(states: readonly IpState[] = IP_STATES): IpRecord[] {
    return [...this.records.values()]
      .filter((r) => states.includes(r.state))
      .map((r) => structuredClone(r));
  }

  counts(): StateCounts {
    const c: StateCounts = { Available: 0, Assigned: 0, PendingRelease: 0, PendingProgramming: 0 };
    for (const r of this.records.values()) c[r.state]++;
    return c;
  }

  countsByFamily(): FamilyCounts[] {
    return this.records.size === 0 ? [] : [{ family: 4, counts: this.counts() }];
  }

  container(ncId: string): ContainerInfo | undefined {
    return this.containers.get(ncId);
  }

  close(): void {}

  set(id: string, state: IpState): void {
    const r = this.records.get(id);
    if (!r) throw new Error(`no ip ${id}`);
    r.state = state;
    r.updatedAt = ++this.clock;
  }
}

/** A record as the store answers for one address: itself, and the list of it. */
function one(r: IpRecord): Released {
  const copy = structuredClone(r);
  return { ...copy, ips: [structuredClone(r)] };
}
