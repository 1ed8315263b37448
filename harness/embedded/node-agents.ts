// The embedded cluster's nodes at work: per node the real sidecar (own state
// dir, own 127.0.0.1:0 listener, own token bound to its Node) and a
// simulated kubelet/CNI that runs every pod bound to the node, whoever
// created it, asking the sidecar for IPs over HTTP. Started a bounded number
// at a time; stopped kubelets first (no new CNI calls), then sidecars. With
// leaks, the kubelets drop a share of their CNI DELs and loseStore() deletes
// a node's IP store and restarts its sidecar on the same port. A host that
// runs kubelets (the worker host) gets the kubelets it takes beside their
// sidecars; leak runs keep all of theirs here, where what they dropped can be
// read. With node networks (embedded --netns) each sidecar listens on a unix
// socket with a token and each kubelet runs the real plugin chain in network
// namespaces (node-networks.ts), all in this process.
import type { KubeConfig } from '@kubernetes/client-node';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { IPSTORE_FILE } from '../../src/ipstore/database.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { LeakCounts } from '../../src/sidecar/leaks.ts';
import { seededRandom } from '../../src/sim/random.ts';
import type { PodEndedWaiting, PodWait } from '../kubelet/kubelet.ts';
import { startSimKubelet } from '../kubelet/start.ts';
import type { ProductAccess } from './access.ts';
import { inBatches } from './batches.ts';
import { httpPodApi, type HttpPodApi } from './http-pod-api.ts';
import type { ComponentHost, NodeAgent, NodeKubelet } from './components.ts';
import { nodeAddress } from './node-objects.ts';
import type { NodeNetworks } from './node-networks.ts';

export interface EmbeddedNode {
  name: string;
  /** Its InternalIP. */
  address: string;
  sidecar: NodeAgent;
  kubelet: NodeKubelet;
}

export interface NodeAgentsOptions {
  nodeNames: readonly string[];
  /** Parent of the per-node state dirs. */
  stateRoot: string;
  host: ComponentHost;
  /** Gives each sidecar its own token, bound to its Node. */
  access: ProductAccess;
  /** The admin's configuration: the kubelets'. */
  kc: KubeConfig;
  logger: Logger;
  events: boolean;
  /** Nodes starting at once. */
  limit: number;
  onRunning?: (wait: PodWait) => void;
  onEndedWaiting?: (ended: PodEndedWaiting) => void;
  leaks?: { dropReleaseRate: number; graceSeconds: number; seed?: number };
  /** embedded --netns: sidecars on unix sockets, kubelets running the real plugin chain in namespaces. */
  networks?: NodeNetworks;
}

export class NodeAgents {
  /** In node order, once started. */
  readonly nodes: EmbeddedNode[] = [];
  /** What sidecars that were replaced by loseStore() had reclaimed and adopted. */
  readonly retiredLeakCounts: LeakCounts[] = [];
  private readonly byIndex: (EmbeddedNode | undefined)[];
  private readonly sidecars: NodeAgent[] = [];
  private readonly kcs = new Map<string, KubeConfig>();
  private closing = false;
  private readonly opts: NodeAgentsOptions;
  private readonly log: Logger;
  /**
   * Every kubelet's pod status calls, over one plain-HTTP client: a run
   * marks pods Running by the ten thousand, and client-node's serializer
   * and fetch cost about twice the CPU per call (http-pod-api.ts).
   */
  private readonly statusCalls: HttpPodApi;

  constructor(opts: NodeAgentsOptions) {
    this.opts = opts;
    this.statusCalls = httpPodApi(opts.kc);
    this.log = opts.logger.child({ component: 'embedded' });
    this.byIndex = opts.nodeNames.map(() => undefined);
  }

  /** Starts every node's sidecar and kubelet, `limit` nodes at a time; resolves once each kubelet is synced. */
  async startAll(): Promise<void> {
    await inBatches(this.opts.nodeNames, this.opts.limit, (name, i) => this.startNode(name, i));
    const nodes = this.byIndex.filter((n): n is EmbeddedNode => n !== undefined);
    this.nodes.splice(0, this.nodes.length, ...nodes);
  }

  /** The cluster is stopping: no store is lost any more (loseStore does nothing). */
  beginStop(): void {
    this.closing = true;
  }

  /** Pods the kubelets have not told the fate of yet, all nodes together (NodeKubelet.settingUp). */
  async settingUp(): Promise<number> {
    const counts = await Promise.all(this.started().map((n) => n.kubelet.settingUp()));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** No new CNI calls: every kubelet stops. */
  async stopKubelets(): Promise<void> {
    await Promise.all(this.started().map((n) => n.kubelet.stop().catch(() => {})));
    this.statusCalls.close();
  }

  async stopSidecars(): Promise<void> {
    await Promise.all(this.sidecars.map((s) => s.stop().catch(() => {})));
  }

  /** Resolves once every sidecar has its first valid NNC (or the timeout passed); returns how many are ready. */
  async whenReady(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    const nodes = this.started();
    const ready = async (): Promise<number> =>
      (await Promise.all(nodes.map((n) => n.sidecar.ready().catch(() => false)))).filter(Boolean)
        .length;
    let n = await ready();
    while (n < nodes.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      n = await ready();
    }
    return n;
  }

  /**
   * The node's IP store is lost: its sidecar stops, the store files are
   * deleted, and a new sidecar starts on the same port (the kubelet's CNI
   * endpoint); resolves once the new one follows the pods (or after 15 s).
   */
  async loseStore(name: string): Promise<void> {
    const node = this.started().find((n) => n.name === name);
    if (node === undefined || this.closing) return;
    const old = node.sidecar;
    await old.stop();
    if (old.inProcess) this.retiredLeakCounts.push(old.inProcess.leaks.counts);
    for (const f of [IPSTORE_FILE, `${IPSTORE_FILE}-wal`, `${IPSTORE_FILE}-shm`]) {
      rmSync(join(this.opts.stateRoot, name, f), { force: true });
    }
    const fresh = await this.startSidecar(name, this.opts.nodeNames.indexOf(name), old.port);
    this.sidecars[this.sidecars.indexOf(old)] = fresh;
    node.sidecar = fresh;
    this.log.warn('IP store lost: sidecar restarted on an empty store', { node: name });
    const deadline = Date.now() + 15_000;
    const following = async (): Promise<boolean> =>
      fresh.inProcess ? fresh.inProcess.pods.notReady() === undefined : fresh.ready();
    while (!(await following()) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** The nodes started so far, in node order. */
  private started(): EmbeddedNode[] {
    return this.byIndex.filter((n): n is EmbeddedNode => n !== undefined);
  }

  private async startNode(name: string, i: number): Promise<void> {
    const { opts } = this;
    mkdirSync(join(opts.stateRoot, name), { recursive: true });
    const sidecar = await this.startSidecar(name, i, 0);
    this.sidecars.push(sidecar);
    const kubelet = await this.startKubelet(name, i, sidecar);
    this.byIndex[i] = { name, address: nodeAddress(i), sidecar, kubelet };
    await kubelet.whenSynced();
  }

  /** Every pod bound to the node, in every namespace, as a real kubelet: beside the sidecar when the host takes it. */
  private async startKubelet(name: string, i: number, sidecar: NodeAgent): Promise<NodeKubelet> {
    const { opts } = this;
    const { onRunning, onEndedWaiting } = opts;
    const there =
      opts.leaks || opts.networks
        ? undefined
        : opts.host.startKubelet?.({
            name,
            index: i,
            nodeIp: nodeAddress(i),
            kc: opts.kc,
            ...(onRunning ? { onRunning } : {}),
            ...(onEndedWaiting ? { onEndedWaiting } : {}),
          });
    if (there) return there;
    const running = startSimKubelet({
      kc: opts.kc,
      statusCalls: this.statusCalls,
      podSource: this.statusCalls,
      nodeName: name,
      nodeIp: nodeAddress(i),
      // The node's sidecar now (loseStore replaces it; a process may move).
      sidecarUrl: () => (this.byIndex[i] ?? { sidecar }).sidecar.url,
      ...(opts.networks ? { cni: opts.networks.runtime(i) } : {}),
      logger: opts.logger.child({ component: 'kubelet', node: name }),
      ...(onRunning ? { onRunning } : {}),
      ...(onEndedWaiting ? { onEndedWaiting } : {}),
      ...(opts.leaks
        ? {
            dropReleaseRate: opts.leaks.dropReleaseRate,
            random: seededRandom((opts.leaks.seed ?? 1) * 1000 + i),
          }
        : {}),
    });
    return {
      whenSynced: () => running.whenSynced(),
      settingUp: () => Promise.resolve(running.kubelet.waitingPods()),
      stop: () => running.stop(),
      inProcess: running,
    };
  }

  private async startSidecar(name: string, index: number, listenPort: number): Promise<NodeAgent> {
    const { opts } = this;
    return opts.host.startSidecar({
      name,
      index,
      stateDir: join(opts.stateRoot, name),
      kc: await this.sidecarKubeConfig(name),
      logger: opts.logger,
      events: opts.events,
      listenPort,
      ...(opts.leaks ? { leakGraceSeconds: opts.leaks.graceSeconds } : {}),
      ...(opts.networks ? { nodeApi: opts.networks.nodeApi(index) } : {}),
    });
  }

  /** Each sidecar's own token, bound to its Node; kept for a restart (loseStore). */
  private async sidecarKubeConfig(name: string): Promise<KubeConfig> {
    let own = this.kcs.get(name);
    if (!own) this.kcs.set(name, (own = await this.opts.access.kubeConfig('sidecar', name)));
    return own;
  }
}
