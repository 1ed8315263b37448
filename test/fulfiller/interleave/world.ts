// Two fulfillers in one process over one local API server (real HTTP, the
// product's adapters), driven step by step by a scheduler (docs/design/fulfiller.md#high-availability).
// Each replica's watches are modelled by the scheduler: a delivery lists the
// NNCs and Nodes and hands the replica what changed since its last delivery
// (as a watch that fell behind delivers the newest versions), a cut stops its
// deliveries and tells the fulfiller its watch is down, a restore re-lists.
// Time (queue, fence, quarantine, doubts) is a manual clock, the API
// server's too (its deletionTimestamps start a quarantine's grace); held
// writes are the API server's own (real milliseconds), and are all applied
// or refused before the clock passes the request timeout.
// kube-controller-manager's garbage collector is the world's own pass (gc()),
// not the API server's in-process one (harness/apiserver/garbage-collector.ts,
// off here): that one acts on a real-time timer, 20 ms after a change, which
// would make a seed's run depend on the machine's speed. The world's deletes
// what the real one deletes here (an NNC whose owner Node is gone, or back
// under another uid), the same way: a DELETE through the API with uid and
// resourceVersion preconditions, so the addresses finalizer keeps the NNC,
// terminating; the scheduler says when it runs (after a Node's deletion at
// once, later, while no replica leads, while writes fail).
// The world also keeps the explorer's oracle of deleted Nodes (deletions):
// what each node's NNC held, and when its Node was deleted, independent of
// how the fulfiller records its quarantine.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ApiServer } from '../../../harness/apiserver/server.ts';
import { CidrBackend } from '../../../src/fulfiller/cidr-backend.ts';
import { makeFulfillerConfig } from '../../../src/fulfiller/config.ts';
import { Fulfiller } from '../../../src/fulfiller/fulfiller.ts';
import {
  kubeClusterListApi,
  kubeNncLifecycleApi,
  kubeNncStatusApi,
  kubeSubnetStateApi,
} from '../../../src/fulfiller/kube-api.ts';
import { NodeBook, nextSeq } from '../../../src/fulfiller/node-book.ts';
import type { NodeObject } from '../../../src/fulfiller/nodes.ts';
import type { NncStatusApi } from '../../../src/fulfiller/ports.ts';
import { createLogger, silentLogger } from '../../../src/log/logger.ts';
import type { NodeNetworkConfig } from '../../../src/nnc/types.ts';
import { CSS_PLURAL, dynamicContainers, NNC_PLURAL } from '../../../src/nnc/types.ts';
import { NNC_API, NS, startTestCluster, type TestCluster } from '../../support/test-cluster.ts';
import { FakeClock, flush } from '../fake-clock.ts';

export { NS };
const NNC = { ...NNC_API, namespace: NS };
export const SUBNET = '10.240.0.0/25'; // 123 usable: room for every node's request
export const MAX_HOLD_MS = 25;
/** The fulfillers' --quarantine. */
export const QUARANTINE_MS = 90_000;
/** Where the world's clock (the fulfillers' and the API server's) starts: a whole second. */
export const EPOCH = Date.parse('2025-01-01T00:00:00Z');

/** A Node the world deleted: until `until`, its addresses may be on no other node's NNC. */
export interface NodeDeletion {
  node: string;
  /** The world's clock when the Node was deleted. */
  at: number;
  /**
   * When its quarantine may end: the grace from the second of the deletion
   * (an API server's timestamps have whole seconds, and the fulfiller counts
   * from the NNC's deletionTimestamp, which is not before the Node's
   * deletion: a grace from it may end up to a second before `at` + grace).
   */
  until: number;
  /** What its NNC held then, before, and after (a write in flight that landed). */
  addresses: Set<string>;
}

export interface Replica {
  name: string;
  fulfiller: Fulfiller;
  book: NodeBook;
  /** The lease as this replica sees it: it may write. */
  holds: boolean;
  /** Its NNC watch delivers (false: cut). */
  nncUp: boolean;
  /** Its Node watch delivers (false: cut). */
  nodeUp: boolean;
  /** The next status write is lost on the way (never reaches the server). */
  loseNext: boolean;
}

export class World {
  readonly replicas: Replica[] = [];
  private lastHoldAt = 0;
  /** The replica that held the Lease last (a handover after a spell without leader goes to the other). */
  private lastHolder: Replica | undefined;

  /** The Nodes the world made and has not deleted. */
  readonly liveNodes = new Set<string>();
  /** Deleted Nodes whose quarantine may not be over yet (the oracle's record). */
  deletions: NodeDeletion[] = [];
  /** Every address seen on a node's NNCs, by node name, until it is free for good. */
  private readonly held = new Map<string, Set<string>>();
  /** Each NNC's (by uid) status as last seen, address to id, and the ids its spec ever released. */
  private readonly statuses = new Map<string, Map<string, string>>();
  private readonly released = new Map<string, Set<string>>();

  readonly clock: FakeClock;
  readonly server: ApiServer;
  readonly kc: KubeConfig;
  private readonly cluster: TestCluster;

  private constructor(clock: FakeClock, cluster: TestCluster) {
    this.clock = clock;
    this.cluster = cluster;
    this.server = cluster.server;
    this.kc = cluster.kc;
  }

  static async start(): Promise<World> {
    const clock = new FakeClock();
    await clock.advance(EPOCH);
    const cluster = await startTestCluster({
      now: () => new Date(clock.now()),
      garbageCollector: false, // gc() plays it, when the scheduler says (above)
      podGc: false, // no pods
    });
    const world = new World(clock, cluster);
    for (const name of ['a', 'b']) world.replicas.push(world.replica(name));
    return world;
  }

  private replica(name: string): Replica {
    const config = makeFulfillerConfig({
      subnet: SUBNET,
      subnetName: 'pods',
      minIntervalMs: 0,
      exhaustionThreshold: 0,
      recoveryMargin: 0,
      backoff: { initialMs: 100, maxMs: 1000 },
      quarantineMs: QUARANTINE_MS,
      workers: 2,
    });
    const book = new NodeBook(() => this.clock.now());
    const r = {
      name,
      book,
      holds: false,
      nncUp: true,
      nodeUp: true,
      loseNext: false,
    } as unknown as Replica;
    const real = kubeNncStatusApi(this.kc, NS);
    const lists = kubeClusterListApi(this.kc, NS);
    const nncApi: NncStatusApi = {
      get: (n) => real.get(n),
      replaceStatus: async (nnc) => {
        if (r.loseNext) {
          r.loseNext = false;
          throw Object.assign(new Error('socket hang up (lost by the scheduler)'), {
            code: 'ECONNRESET',
          });
        }
        return real.replaceStatus(nnc);
      },
    };
    r.fulfiller = new Fulfiller({
      config,
      book,
      backend: new CidrBackend({ cidr: SUBNET, subnetName: 'pods' }, book.addresses),
      nncApi,
      lifecycleApi: kubeNncLifecycleApi(this.kc, NS),
      cssApi: kubeSubnetStateApi(this.kc, NS),
      // Without anyPodOn: the explorer's pods never go, a quarantine lasts its grace.
      lists: { listNncs: lists.listNncs, listNodes: lists.listNodes, getNode: lists.getNode! },
      logger: process.env.INTERLEAVE_DEBUG
        ? createLogger({ level: 'debug', now: () => new Date(this.clock.now()) }).child({
            replica: name,
          })
        : silentLogger(),
      clock: this.clock,
      random: () => 0.5,
      canWrite: () => r.holds,
    });
    return r;
  }

  async nncs(): Promise<NodeNetworkConfig[]> {
    return (await this.nncList()).items;
  }

  async nodes(): Promise<NodeObject[]> {
    return (await this.nodeList()).items;
  }

  private async nncList(): Promise<{ items: NodeNetworkConfig[]; rv?: string }> {
    const list = (await this.kc
      .makeApiClient(CustomObjectsApi)
      .listNamespacedCustomObject(NNC)) as {
      items: NodeNetworkConfig[];
      metadata?: { resourceVersion?: string };
    };
    return { items: list.items, rv: list.metadata?.resourceVersion };
  }

  private async nodeList(): Promise<{ items: NodeObject[]; rv?: string }> {
    const list = await this.kc.makeApiClient(CoreV1Api).listNode();
    return { items: list.items as NodeObject[], rv: list.metadata?.resourceVersion };
  }

  /**
   * The oracle's bookkeeping, from the NNCs as they are now (after every
   * step), and what it finds wrong in how they changed: an address gone
   * from an NNC (the same uid) whose id its spec never released. What each
   * node's NNCs hold joins what it held (an address its spec released, once
   * gone from its status, is no longer its), and the deleted Nodes still in
   * their grace take it too (a status write in flight at the deletion that
   * landed after it). A node's record is forgotten once its grace is over,
   * its Node gone and no NNC of its name is left: its addresses are free
   * for good.
   */
  observe(nncs: NodeNetworkConfig[]): string[] {
    const now = this.clock.now();
    const out: string[] = [];
    for (const o of nncs) {
      const name = o.metadata.name;
      const set = this.held.get(name) ?? new Set<string>();
      for (const ip of addressesOfNnc(o)) set.add(ip);
      this.held.set(name, set);
      const uid = o.metadata.uid ?? '';
      const released = this.released.get(uid) ?? new Set<string>();
      for (const id of o.spec?.ipsNotInUse ?? []) released.add(id);
      this.released.set(uid, released);
      const ids = idsOfNnc(o);
      const before = this.statuses.get(uid);
      for (const [ip, id] of before ?? []) {
        if (ids.has(ip)) continue;
        // Released by the node: free for any node from now on.
        if (released.has(id)) set.delete(ip);
        else out.push(`${ip} (id ${id}) left ${name}'s status (uid ${uid}) without being released`);
      }
      this.statuses.set(uid, ids);
    }
    this.deletions = this.deletions.filter((d) => now < d.until);
    for (const d of this.deletions)
      for (const ip of this.held.get(d.node) ?? []) d.addresses.add(ip);
    const named = new Set(nncs.map((o) => o.metadata.name));
    for (const name of [...this.held.keys()])
      if (
        !this.liveNodes.has(name) &&
        !named.has(name) &&
        !this.deletions.some((d) => d.node === name)
      )
        this.held.delete(name);
    return out;
  }

  /**
   * Tells a replica what changed since its last delivery: its watches
   * re-list (a watch that fell behind and lists again; a list is newer than
   * anything received before it was sent, versions.ts).
   */
  async deliver(r: Replica): Promise<void> {
    const sent = nextSeq();
    const [nncs, nodes] = await Promise.all([this.nncs(), this.nodes()]);
    if (r.nodeUp) r.fulfiller.nodesSynced(nodes, sent);
    if (r.nncUp) r.fulfiller.synced(nncs, sent);
  }

  /** The replica's NNC watch (and with `nodes` its Node watch) fails: no deliveries until restored. */
  cut(r: Replica, nodes = true): void {
    r.nncUp = false;
    r.fulfiller.watchDown('nnc', 'cut by the scheduler');
    if (!nodes) return;
    r.nodeUp = false;
    r.fulfiller.watchDown('node', 'cut by the scheduler');
  }

  /** The replica's watches list again and run. */
  async restore(r: Replica): Promise<void> {
    r.nncUp = true;
    r.nodeUp = true;
    const sent = nextSeq();
    const [nncs, nodes] = await Promise.all([this.nncs(), this.nodes()]);
    r.fulfiller.nodesSynced(nodes, sent);
    r.fulfiller.synced(nncs, sent);
  }

  /**
   * The Lease changes hands: the holder stops writing and steps down; the
   * other leads (after a spell without leader, the one that did not lead last).
   */
  async handover(): Promise<void> {
    const from = await this.resign();
    const to = this.replicas.find((r) => r !== (from ?? this.lastHolder))!;
    to.holds = true;
    this.lastHolder = to;
    to.fulfiller.lead();
  }

  /** The holder stops writing and steps down, and nobody takes the Lease (yet): no replica leads. */
  async resign(): Promise<Replica | undefined> {
    const from = this.replicas.find((r) => r.holds);
    if (!from) return undefined;
    from.holds = false;
    await from.fulfiller.follow();
    return from;
  }

  /** The next `times` writes of `target` are refused with `status` (nothing applied). */
  failWrites(target: WriteTarget, status: number, times: number): void {
    const [verb, resource, subresource] = WRITES[target];
    this.server.faults.inject({ verb, resource, subresource, status, times });
  }

  /** The next status write is answered 504 and applied `ms` (real) later. */
  holdNextStatusWrite(ms: number): void {
    this.lastHoldAt = Date.now();
    this.server.faults.inject({
      verb: 'update',
      resource: NNC_PLURAL,
      subresource: 'status',
      status: 504,
      afterCommit: true,
      holdMs: Math.min(ms, MAX_HOLD_MS),
    });
  }

  /** Lets the leader work: the clock moves `ms`, and in-flight requests finish. */
  async run(ms = 1000): Promise<void> {
    for (let i = 0; i < 5; i++) {
      await this.clock.advance(ms / 5);
      await this.idle();
    }
  }

  /** Time passes beyond the request timeout: every held write is applied or refused first. */
  async longWait(ms: number): Promise<void> {
    const left = this.lastHoldAt + MAX_HOLD_MS + 5 - Date.now();
    if (left > 0) await new Promise((r) => setTimeout(r, left));
    await this.run(ms);
  }

  /** Waits (real time, bounded) until no node action is in flight; queued ones wait for the clock. */
  async idle(): Promise<void> {
    for (let i = 0; i < 500; i++) {
      await flush();
      if (this.replicas.every((r) => r.fulfiller.stats().active === 0)) return;
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** The node's sidecar asks for `requestedIPCount`, giving back the first `release` ids of its status. */
  async setSpec(name: string, requestedIPCount: number, release = 0): Promise<void> {
    const api = this.kc.makeApiClient(CustomObjectsApi);
    const cur = await this.cluster.getNnc(name);
    if (!cur) return;
    const ids = (dynamicContainers(cur)[0]?.ipAssignments ?? []).map((a) => a.name);
    const ipsNotInUse = ids.slice(0, release);
    const spec = { requestedIPCount, ...(ipsNotInUse.length > 0 ? { ipsNotInUse } : {}) };
    await api
      .replaceNamespacedCustomObject({ ...NNC, name, body: { ...cur, spec } })
      .catch(() => undefined); // a 409: someone wrote it meanwhile; the scheduler moves on
  }

  /** The next write of `target` is applied, and its answer lost (504 after the commit). */
  loseAnswer(target: WriteTarget): void {
    const [verb, resource, subresource] = WRITES[target];
    this.server.faults.inject({ verb, resource, subresource, status: 504, afterCommit: true });
  }

  /** The holder steps down and takes the Lease again at once: a new term after its own. */
  async relead(): Promise<void> {
    const r = await this.resign();
    if (!r) return this.handover();
    r.holds = true;
    this.lastHolder = r;
    r.fulfiller.lead();
  }

  async addNode(name: string): Promise<void> {
    const made = await this.kc
      .makeApiClient(CoreV1Api)
      .createNode({ body: { metadata: { name } } })
      .catch(() => undefined);
    if (made) this.liveNodes.add(name);
  }

  /**
   * Deletes the Node (with `gc`, the garbage collector deletes its NNC
   * moments after, before anyone else moves) and records, for the oracle,
   * what the node holds: its NNC's addresses now and what its NNCs held
   * before (an NNC deleted and not yet restored).
   */
  async deleteNode(name: string, gc = false): Promise<void> {
    const nnc = await this.cluster.getNnc(name);
    const deleted = await this.kc
      .makeApiClient(CoreV1Api)
      .deleteNode({ name })
      .catch(() => undefined);
    if (deleted) {
      this.liveNodes.delete(name);
      const at = this.clock.now();
      const addresses = new Set([...(this.held.get(name) ?? []), ...addressesOfNnc(nnc)]);
      this.deletions.push({
        node: name,
        at,
        until: Math.floor(at / 1000) * 1000 + QUARANTINE_MS,
        addresses,
      });
    }
    if (gc) await this.gc();
  }

  /**
   * One pass of the garbage collector over the NNCs (attemptToDeleteItem,
   * pkg/controller/garbagecollector): an NNC whose every owner Node is gone,
   * or there under another uid, is deleted with its uid and resourceVersion
   * as preconditions, in the background. A terminating one is left to its
   * finalizers; a refused delete waits for the next pass.
   */
  async gc(): Promise<void> {
    const [nncs, nodes] = await Promise.all([this.nncs(), this.nodes()]);
    const uids = new Map(nodes.map((n) => [n.metadata!.name!, n.metadata!.uid]));
    const api = this.kc.makeApiClient(CustomObjectsApi);
    for (const o of nncs) {
      const refs = ((o as Owned).metadata.ownerReferences ?? []).filter(
        (r) => r.kind === 'Node' && r.apiVersion === 'v1',
      );
      if (o.metadata.deletionTimestamp || refs.length === 0) continue;
      if (refs.some((r) => r.name !== undefined && uids.get(r.name) === r.uid)) continue;
      await api
        .deleteNamespacedCustomObject({
          ...NNC,
          name: o.metadata.name,
          propagationPolicy: 'Background',
          body: {
            preconditions: { uid: o.metadata.uid, resourceVersion: o.metadata.resourceVersion },
          },
        })
        .catch(() => undefined);
    }
  }

  async deleteNnc(name: string): Promise<void> {
    await this.kc
      .makeApiClient(CustomObjectsApi)
      .deleteNamespacedCustomObject({ ...NNC, name })
      .catch(() => undefined);
  }

  async stop(): Promise<void> {
    for (const r of this.replicas) {
      r.holds = false;
      await r.fulfiller.stop();
    }
    await this.cluster.close();
  }
}

type Owned = NodeNetworkConfig;

/** The writes a 'fail' step can refuse. */
export type WriteTarget = 'css-status' | 'nnc-status' | 'nnc';
const WRITES: Record<WriteTarget, [verb: string, resource: string, subresource: string]> = {
  // The CSS publisher's merge patch of the status.
  'css-status': ['patch', CSS_PLURAL, 'status'],
  // A status round's replace.
  'nnc-status': ['update', NNC_PLURAL, 'status'],
  // The NNC's metadata patches: the addresses finalizer on or off, the term fence's mark.
  nnc: ['patch', NNC_PLURAL, ''],
};

/** Each address of an NNC's dynamic containers with its id (a primary IP under its container's). */
function idsOfNnc(o: NodeNetworkConfig): Map<string, string> {
  const out = new Map<string, string>();
  for (const nc of dynamicContainers(o)) {
    if (nc.primaryIP) out.set(nc.primaryIP, `primary of ${nc.id}`);
    for (const a of nc.ipAssignments ?? []) if (a.ip) out.set(a.ip, a.name);
  }
  return out;
}

function addressesOfNnc(o: NodeNetworkConfig | undefined): string[] {
  return o ? [...holders([o]).keys()] : [];
}

/** Every address in the NNCs' dynamic containers, with its holders. */
export function holders(nncs: NodeNetworkConfig[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const o of nncs)
    for (const nc of dynamicContainers(o))
      for (const ip of [nc.primaryIP, ...(nc.ipAssignments ?? []).map((a) => a.ip)])
        if (ip) out.set(ip, [...(out.get(ip) ?? []), o.metadata.name]);
  return out;
}
