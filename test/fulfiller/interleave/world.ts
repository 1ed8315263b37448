// Two fulfillers in one process over one local API server (real HTTP, the
// product's adapters), driven step by step by a scheduler (README "High availability").
// Each replica's watches are modelled by the scheduler: a delivery lists the
// NNCs and Nodes and hands the replica what changed since its last delivery
// (as a watch that fell behind delivers the newest versions), a cut stops its
// deliveries and tells the fulfiller its watch is down, a restore re-lists.
// Time (queue, fence, quarantine, doubts) is a manual clock; held writes are
// the API server's own (real milliseconds), and are all applied or refused
// before the clock passes the request timeout.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ApiServer } from '../../../harness/apiserver/server.ts';
import { startApiServer } from '../../../harness/apiserver/server.ts';
import { CidrBackend } from '../../../src/fulfiller/cidr-backend.ts';
import { makeFulfillerConfig } from '../../../src/fulfiller/config.ts';
import { Fulfiller } from '../../../src/fulfiller/fulfiller.ts';
import {
  kubeClusterListApi,
  kubeNncLifecycleApi,
  kubeNncStatusApi,
  kubeSubnetStateApi,
} from '../../../src/fulfiller/kube-api.ts';
import { AddressLedger } from '../../../src/fulfiller/ledger.ts';
import type { NodeObject } from '../../../src/fulfiller/nodes.ts';
import type { NncStatusApi } from '../../../src/fulfiller/ports.ts';
import { loadKubeConfig } from '../../../src/kube/config.ts';
import { createLogger, silentLogger } from '../../../src/log/logger.ts';
import type { NodeNetworkConfig } from '../../../src/nnc/types.ts';
import { dynamicContainers } from '../../../src/nnc/types.ts';
import { CRDS_DIR } from '../../support/wait.ts';
import { FakeClock, flush } from '../fake-clock.ts';

export const NS = 'kube-system';
const NNC = {
  group: 'acn.azure.com',
  version: 'v1alpha',
  namespace: NS,
  plural: 'nodenetworkconfigs',
};
const CSS = {
  group: 'acn.azure.com',
  version: 'v1alpha1',
  namespace: NS,
  plural: 'clustersubnetstates',
};
export const SUBNET = '10.240.0.0/25'; // 123 usable: room for every node's request
export const MAX_HOLD_MS = 25;

export interface Replica {
  name: string;
  fulfiller: Fulfiller;
  ledger: AddressLedger;
  /** The lease as this replica sees it: it may write. */
  holds: boolean;
  /** Its NNC watch delivers (false: cut). */
  nncUp: boolean;
  /** Its Node watch delivers (false: cut). */
  nodeUp: boolean;
  /** What it was last told, by name. */
  seenNncs: Map<string, NodeNetworkConfig>;
  seenNodes: Map<string, NodeObject>;
  /** The next status write is lost on the way (never reaches the server). */
  loseNext: boolean;
}

export class World {
  readonly clock = new FakeClock();
  readonly replicas: Replica[] = [];
  private lastHoldAt = 0;

  readonly server: ApiServer;
  readonly kc: KubeConfig;

  private constructor(server: ApiServer, kc: KubeConfig) {
    this.server = server;
    this.kc = kc;
  }

  static async start(): Promise<World> {
    const server = await startApiServer({ crdsDir: CRDS_DIR });
    const world = new World(server, loadKubeConfig({ kubeconfig: server.kubeconfigPath }).kc);
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
      quarantineMs: 90_000,
      workers: 2,
    });
    const ledger = new AddressLedger();
    const r = {
      name,
      ledger,
      holds: false,
      nncUp: true,
      nodeUp: true,
      seenNncs: new Map(),
      seenNodes: new Map(),
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
      ledger,
      backend: new CidrBackend({ cidr: SUBNET, subnetName: 'pods' }, ledger),
      nncApi,
      lifecycleApi: kubeNncLifecycleApi(this.kc, NS),
      cssApi: kubeSubnetStateApi(this.kc, NS),
      // Without anyPodOn: the explorer's pods never go, a quarantine lasts its grace.
      lists: { listNncs: lists.listNncs, listNodes: lists.listNodes },
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

  async quarantine(): Promise<Array<{ node: string; containers: unknown[] }>> {
    const css = (await this.kc
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...CSS, name: 'pods' })
      .catch(() => undefined)) as { status?: { quarantine?: [] } } | undefined;
    return css?.status?.quarantine ?? [];
  }

  /** Tells a replica what changed since its last delivery (a watch that fell behind). */
  async deliver(r: Replica): Promise<void> {
    const [nncs, nodes] = await Promise.all([this.nncs(), this.nodes()]);
    const f = r.fulfiller;
    const nodeNames = new Set(nodes.map((n) => n.metadata!.name!));
    if (r.nodeUp) this.deliverNodes(r, nodes, nodeNames);
    if (!r.nncUp) return;
    const nncNames = new Set(nncs.map((o) => o.metadata.name));
    for (const o of nncs) {
      if (r.seenNncs.get(o.metadata.name)?.metadata.resourceVersion !== o.metadata.resourceVersion)
        f.upsert(o);
      r.seenNncs.set(o.metadata.name, o);
    }
    for (const [name, o] of r.seenNncs)
      if (!nncNames.has(name)) {
        f.remove(o);
        r.seenNncs.delete(name);
      }
  }

  private deliverNodes(r: Replica, nodes: NodeObject[], names: Set<string>): void {
    for (const n of nodes) {
      if (
        r.seenNodes.get(n.metadata!.name!)?.metadata?.resourceVersion !==
        n.metadata?.resourceVersion
      )
        r.fulfiller.upsertNode(n);
      r.seenNodes.set(n.metadata!.name!, n);
    }
    for (const [name, n] of r.seenNodes)
      if (!names.has(name)) {
        r.fulfiller.removeNode(n);
        r.seenNodes.delete(name);
      }
  }

  /** The replica's NNC watch (and with `nodes` its Node watch) fails: no deliveries until restored. */
  cut(r: Replica, nodes = true): void {
    r.nncUp = false;
    r.fulfiller.watchDown('nnc', 'cut by the scheduler');
    if (!nodes) return;
    r.nodeUp = false;
    r.fulfiller.watchDown('node', 'cut by the scheduler');
  }

  /** The replica's watches list again and run (an informer's re-list reports what it cached and the list lacks as deleted). */
  async restore(r: Replica): Promise<void> {
    r.nncUp = true;
    r.nodeUp = true;
    const [nncList, nodeList] = await Promise.all([this.nncList(), this.nodeList()]);
    const [nncs, nodes] = [nncList.items, nodeList.items];
    const nodeNames = new Set(nodes.map((n) => n.metadata!.name!));
    for (const [name, n] of r.seenNodes) if (!nodeNames.has(name)) r.fulfiller.removeNode(n);
    const nncNames = new Set(nncs.map((o) => o.metadata.name));
    for (const [name, o] of r.seenNncs) if (!nncNames.has(name)) r.fulfiller.remove(o);
    r.seenNodes = new Map(nodes.map((n) => [n.metadata!.name!, n]));
    r.seenNncs = new Map(nncs.map((o) => [o.metadata.name, o]));
    // As the product's watch: the list's resourceVersion comes with 'synced' (src/kube/watch.ts).
    r.fulfiller.nodesSynced(nodes, nodeList.rv);
    r.fulfiller.synced(nncs, nncList.rv);
  }

  /** The Lease changes hands: the holder stops writing and steps down; the other leads. */
  async handover(): Promise<void> {
    const from = this.replicas.find((r) => r.holds);
    const to = this.replicas.find((r) => r !== from)!;
    if (from) {
      from.holds = false;
      await from.fulfiller.follow();
    }
    to.holds = true;
    to.fulfiller.lead();
  }

  /** The next status write is answered 504 and applied `ms` (real) later. */
  holdNextStatusWrite(ms: number): void {
    this.lastHoldAt = Date.now();
    this.server.faults.inject({
      verb: 'update',
      resource: 'nodenetworkconfigs',
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

  async setSpec(name: string, requestedIPCount: number): Promise<void> {
    const api = this.kc.makeApiClient(CustomObjectsApi);
    const cur = (await api.getNamespacedCustomObject({ ...NNC, name }).catch(() => undefined)) as
      NodeNetworkConfig | undefined;
    if (!cur) return;
    await api
      .replaceNamespacedCustomObject({ ...NNC, name, body: { ...cur, spec: { requestedIPCount } } })
      .catch(() => undefined); // a 409: someone wrote it meanwhile; the scheduler moves on
  }

  async addNode(name: string): Promise<void> {
    await this.kc
      .makeApiClient(CoreV1Api)
      .createNode({ body: { metadata: { name } } })
      .catch(() => undefined);
  }

  async deleteNode(name: string): Promise<void> {
    await this.kc
      .makeApiClient(CoreV1Api)
      .deleteNode({ name })
      .catch(() => undefined);
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
    await this.server.close();
  }
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
