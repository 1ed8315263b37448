// The embedded cluster, assembled from the real pieces: the local API server
// as strict as a real cluster (RBAC, tokens required, the CRDs, service
// accounts, RBAC and admission policies of manifests/ applied: access.ts),
// the namespaces, one Ready Node (InternalIP, kubelet version, room for 250
// pods) per node, the fulfiller on the pod subnet (which creates every
// Node's NNC, as on a real cluster), a scheduler that binds pods created
// without a node, and per node the real sidecar (own state dir, own
// 127.0.0.1:0 listener) and a simulated kubelet/CNI that runs every pod bound
// to its node, whoever created it, asking the sidecar for IPs over HTTP.
// The fulfiller runs as its service account and each sidecar with its own
// token bound to its Node, so the product gets exactly what its manifests
// grant; the harness (scheduler, kubelets, workload driver, the human's
// kubectl) uses the admin kubeconfig. Everyone shares one root logger to keep
// per-node overhead small, and one keep-alive connection pool (client-node
// alone would open a connection per request). stop() tears it down in the
// reverse order: scheduler, kubelets, sidecars, fulfiller, API server,
// connection pool. With `leaks`, the kubelets drop a share of their CNI DELs
// and loseStore() deletes a node's IP store and restarts its sidecar on the
// same port. The fulfiller and sidecars run in this process unless a
// component host says otherwise (the chaos harness runs them as processes:
// components.ts).
import {
  CoreV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startApiServer, type ApiServer } from '../apiserver/server.ts';
import { grantProductAccess, type ProductAccess } from './access.ts';
import type { BackendFactory } from '../../src/fulfiller/backend.ts';
import { makeFulfillerConfig, type FulfillerConfig } from '../../src/fulfiller/config.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { loadKubeConfig } from '../../src/kube/config.ts';
import type { SharedDispatchers } from '../../src/kube/shared-dispatcher.ts';
import type { Logger } from '../../src/log/logger.ts';
import { IPSTORE_FILE } from '../../src/ipstore/database.ts';
import type { LeakCounts } from '../../src/sidecar/leaks.ts';
import { seededRandom } from '../../src/sim/random.ts';
import type { RunSidecarDeps } from '../../src/sidecar/run.ts';
import type { PodWait } from '../kubelet/kubelet.ts';
import { startSimKubelet, type RunningSimKubelet } from '../kubelet/start.ts';
import { startSimScheduler, type RunningSimScheduler } from '../scheduler/scheduler.ts';
import { KUBE_VERSION } from '../apiserver/discovery.ts';
import {
  inProcessHost,
  type ComponentHost,
  type ControlPlane,
  type NodeAgent,
} from './components.ts';

export const WORKLOAD_NAMESPACE = 'workload';

/** The binding that makes requests without credentials cluster-admin (anonymousAdmin). */
export const ANONYMOUS_ADMIN_BINDING = 'embedded-anonymous-cluster-admin';

export interface EmbeddedClusterOptions {
  nodeNames: readonly string[];
  /** Pod subnet of the fulfiller's CIDR backend. */
  podSubnet: string;
  /** Where state dirs and the kubeconfig go. */
  runDir: string;
  /** Parent of the per-node state dirs (default runDir/state); a tmpfs makes SQLite syncs cheap. */
  stateRoot?: string;
  logger: Logger;
  /** 0: an ephemeral port. */
  apiPort?: number;
  /** The API server serves HTTPS with a CA made at start; every client trusts it through the kubeconfig. */
  tls?: boolean;
  /**
   * Requests without credentials are allowed and cluster-admin, so a human's
   * `kubectl --server=URL` works (embedded --serve). The components never
   * send such requests: each carries its own token, and a bad token is
   * refused (401) rather than made anonymous. Default false: tokens required.
   */
  anonymousAdmin?: boolean;
  /** Fulfiller settings over the embedded defaults. */
  fulfiller?: Partial<FulfillerConfig>;
  /** Kubernetes Events from the sidecars and fulfiller (default true). */
  events?: boolean;
  /** Extra sidecar tuning (tests, bench), in process. */
  sidecar?: Pick<RunSidecarDeps, 'tickMs' | 'writeWindowMs' | 'shutdownTimeoutMs'>;
  /** The fulfiller's backend (default: CIDR on podSubnet); with it, each Node's providerID. */
  backend?: { factory: BackendFactory; providerID(node: string): string | undefined };
  /** Where the fulfiller and sidecars run (default: in this process). */
  host?: ComponentHost;
  /** Setup calls in flight at once (default 32). */
  setupConcurrency?: number;
  onRunning?: (wait: PodWait) => void;
  /**
   * Simulated leaks: the kubelets drop this share of their CNI DELs (seeded
   * per node) and the sidecars reclaim after `graceSeconds`.
   */
  leaks?: { dropReleaseRate: number; graceSeconds: number; seed?: number };
}

export interface EmbeddedNode {
  name: string;
  /** Its InternalIP. */
  address: string;
  sidecar: NodeAgent;
  kubelet: RunningSimKubelet;
}

export interface EmbeddedCluster {
  server: ApiServer;
  /** The admin's (the harness's): kubelets, workload driver, reports. */
  kc: KubeConfig;
  /** The manifests' access objects as applied, and the components' service accounts. */
  access: ProductAccess;
  /** The fulfiller, when it runs in this process. */
  fulfiller: RunningFulfiller | undefined;
  controlPlane: ControlPlane;
  fulfillerConfig: FulfillerConfig;
  scheduler: RunningSimScheduler;
  /** In node order (node-0, node-1, ...). */
  nodes: EmbeddedNode[];
  /** Resolves once every sidecar has its first valid NNC (or the timeout passed); returns how many are ready. */
  whenReady(timeoutMs: number): Promise<number>;
  /**
   * The node's IP store is lost: its sidecar stops, the store files are
   * deleted, and a new sidecar starts on the same port (the kubelet's CNI
   * endpoint); resolves once the new one follows the pods (or after 15 s).
   */
  loseStore(name: string): Promise<void>;
  /** What sidecars that were replaced by loseStore() had reclaimed and adopted. */
  readonly retiredLeakCounts: LeakCounts[];
  stop(): Promise<void>;
}

/**
 * The fulfiller settings of the embedded run: exhaustion at one batch of free
 * addresses, held at least 10 s so a short scenario still shows the recovery.
 */
export function embeddedFulfillerConfig(
  podSubnet: string,
  overrides: Partial<FulfillerConfig> = {},
): FulfillerConfig {
  const batch = overrides.scaler?.batchSize ?? 16;
  return makeFulfillerConfig({
    subnet: podSubnet,
    exhaustionThreshold: batch,
    recoveryMargin: batch,
    exhaustionHoldMs: 10_000,
    workers: 8,
    minIntervalMs: 50,
    ...overrides,
  });
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function inBatches<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Watch history the embedded API server keeps for `nodes` nodes (at least the server's 10,000). */
export function embeddedHistoryLimit(nodes: number): number {
  return Math.max(10_000, nodes * 150);
}

/** The InternalIP of node `i`: 10.224.x.y, outside any pod subnet the scenarios use. */
export function nodeAddress(i: number): string {
  const n = i + 4;
  return `10.224.${(n >> 8) & 255}.${n & 255}`;
}

/** Pods each embedded node takes (status.allocatable.pods): Azure CNI's maximum. */
export const NODE_PODS = 250;

/** The status an embedded node reports: Ready, its address, version and room, as a kubelet would. */
export function embeddedNodeStatus(
  name: string,
  address: string,
  now: Date,
): Record<string, unknown> {
  const room = { pods: String(NODE_PODS), cpu: '4', memory: '16Gi' };
  return {
    addresses: [
      { type: 'InternalIP', address },
      { type: 'Hostname', address: name },
    ],
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'simulated kubelet is posting ready status',
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
    ],
    capacity: room,
    allocatable: room,
    nodeInfo: {
      kubeletVersion: KUBE_VERSION.gitVersion,
      kubeProxyVersion: KUBE_VERSION.gitVersion,
      containerRuntimeVersion: 'sim://1.0',
      operatingSystem: 'linux',
      architecture: 'amd64',
      osImage: 'pool-monitor embedded node',
      kernelVersion: '',
      machineID: '',
      systemUUID: '',
      bootID: '',
    },
  };
}

export async function startEmbeddedCluster(opts: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
  const log = opts.logger.child({ component: 'embedded' });
  const limit = opts.setupConcurrency ?? 32;
  const fulfillerConfig = embeddedFulfillerConfig(opts.podSubnet, opts.fulfiller);
  const server = await startApiServer({
    port: opts.apiPort ?? 0,
    tls: opts.tls === true,
    authorizationMode: 'RBAC',
    anonymous: opts.anonymousAdmin === true,
    kubeconfigPath: join(opts.runDir, 'kubeconfig'),
    logger: opts.logger.child({ component: 'apiserver' }),
    // Watch history for ~150 events per node: a watch that drops (or times out
    // between two bookmarks) resumes instead of getting 410 Gone and re-listing.
    historyLimit: embeddedHistoryLimit(opts.nodeNames.length),
    // Thousands of watches connect at once during set-up (capped by net.core.somaxconn).
    listenBacklog: 4096,
  });
  const host = opts.host ?? inProcessHost(opts.sidecar);
  const started: {
    fulfiller?: ControlPlane;
    scheduler?: RunningSimScheduler;
    dispatchers?: SharedDispatchers;
    nodes: EmbeddedNode[];
    sidecars: NodeAgent[];
  } = { nodes: [], sidecars: [] };
  const stopAll = async (): Promise<void> => {
    await started.scheduler?.stop().catch(() => {});
    await Promise.all(started.nodes.map((n) => n.kubelet.stop().catch(() => {})));
    await Promise.all(started.sidecars.map((s) => s.stop().catch(() => {})));
    await started.fulfiller?.stop().catch(() => {});
    await server.close();
    await started.dispatchers?.destroy();
  };
  try {
    // Every in-process client shares one keep-alive connection pool (the
    // product's, shared-dispatcher.ts), whatever its token; thousands of
    // watches get their own.
    const loaded = loadKubeConfig({
      kubeconfig: server.kubeconfigPath,
      watchConnections: 'own',
      maxConnections: Infinity, // a thousand nodes' requests in one process
    });
    const kc = loaded.kc;
    started.dispatchers = loaded.connections;
    const core = kc.makeApiClient(CoreV1Api);
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const access = await grantProductAccess(kc, { connections: loaded.connections });
    log.info('manifests applied', {
      objects: access.objects.map((o) => `${o.kind}/${o.metadata.name}`),
    });
    if (opts.anonymousAdmin === true)
      await kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
        body: {
          metadata: { name: ANONYMOUS_ADMIN_BINDING },
          roleRef: {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'ClusterRole',
            name: 'cluster-admin',
          },
          subjects: [
            { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:anonymous' },
          ],
        },
      });

    await core.createNamespace({ body: { metadata: { name: WORKLOAD_NAMESPACE } } });
    await inBatches(opts.nodeNames, limit, async (name, i) => {
      const providerID = opts.backend?.providerID(name);
      await core.createNode({
        body: {
          metadata: {
            name,
            labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' },
          },
          ...(providerID ? { spec: { providerID } } : {}),
        },
      });
      await core.patchNodeStatus(
        { name, body: { status: embeddedNodeStatus(name, nodeAddress(i), new Date()) } },
        merge,
      );
    });
    log.info('nodes created', { nodes: opts.nodeNames.length });

    // The fulfiller creates the NNCs; it runs as its service account.
    started.fulfiller = await host.startControlPlane({
      kc: await access.kubeConfig('fulfiller'),
      config: fulfillerConfig,
      logger: opts.logger,
      events: opts.events ?? true,
      ...(opts.backend ? { backend: opts.backend.factory } : {}),
    });

    started.scheduler = startSimScheduler({
      kc,
      logger: opts.logger,
      events: opts.events ?? true,
    });

    const stateRoot = opts.stateRoot ?? join(opts.runDir, 'state');
    const nodes: (EmbeddedNode | undefined)[] = opts.nodeNames.map(() => undefined);
    // Each sidecar's own token, bound to its Node; kept for a restart (loseStore).
    const sidecarKcs = new Map<string, KubeConfig>();
    const sidecarKubeConfig = async (name: string): Promise<KubeConfig> => {
      let own = sidecarKcs.get(name);
      if (!own) sidecarKcs.set(name, (own = await access.kubeConfig('sidecar', name)));
      return own;
    };
    const startSidecar = async (
      name: string,
      index: number,
      listenPort: number,
    ): Promise<NodeAgent> =>
      host.startSidecar({
        name,
        index,
        stateDir: join(stateRoot, name),
        kc: await sidecarKubeConfig(name),
        logger: opts.logger,
        events: opts.events ?? true,
        listenPort,
        ...(opts.leaks ? { leakGraceSeconds: opts.leaks.graceSeconds } : {}),
      });
    await inBatches(opts.nodeNames, limit, async (name, i) => {
      mkdirSync(join(stateRoot, name), { recursive: true });
      const sidecar = await startSidecar(name, i, 0);
      started.sidecars.push(sidecar);
      // Every pod bound to the node, in every namespace, as a real kubelet.
      const kubelet = startSimKubelet({
        kc,
        nodeName: name,
        nodeIp: nodeAddress(i),
        // The node's sidecar now (loseStore replaces it; a process may move).
        sidecarUrl: () => (nodes[i] ?? { sidecar }).sidecar.url,
        logger: opts.logger.child({ component: 'kubelet', node: name }),
        ...(opts.onRunning ? { onRunning: opts.onRunning } : {}),
        ...(opts.leaks
          ? {
              dropReleaseRate: opts.leaks.dropReleaseRate,
              random: seededRandom((opts.leaks.seed ?? 1) * 1000 + i),
            }
          : {}),
      });
      const node: EmbeddedNode = { name, address: nodeAddress(i), sidecar, kubelet };
      started.nodes.push(node);
      nodes[i] = node;
      await kubelet.whenSynced();
    });
    await started.scheduler.whenSynced();
    log.info('sidecars and kubelets started', { nodes: started.nodes.length });

    let stopping: Promise<void> | undefined;
    const retiredLeakCounts: LeakCounts[] = [];
    const loseStore = async (name: string): Promise<void> => {
      const node = started.nodes.find((n) => n.name === name);
      if (node === undefined || stopping !== undefined) return;
      const old = node.sidecar;
      await old.stop();
      if (old.inProcess) retiredLeakCounts.push(old.inProcess.leaks.counts);
      for (const f of [IPSTORE_FILE, `${IPSTORE_FILE}-wal`, `${IPSTORE_FILE}-shm`]) {
        rmSync(join(stateRoot, name, f), { force: true });
      }
      const fresh = await startSidecar(name, opts.nodeNames.indexOf(name), old.port);
      started.sidecars[started.sidecars.indexOf(old)] = fresh;
      node.sidecar = fresh;
      log.warn('IP store lost: sidecar restarted on an empty store', { node: name });
      const deadline = Date.now() + 15_000;
      const following = async (): Promise<boolean> =>
        fresh.inProcess ? fresh.inProcess.pods.notReady() === undefined : fresh.ready();
      while (!(await following()) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    return {
      server,
      kc,
      access,
      fulfiller: started.fulfiller.inProcess,
      controlPlane: started.fulfiller,
      fulfillerConfig,
      scheduler: started.scheduler,
      nodes: nodes.filter((n): n is EmbeddedNode => n !== undefined),
      async whenReady(timeoutMs) {
        const deadline = Date.now() + timeoutMs;
        const ready = async (): Promise<number> =>
          (
            await Promise.all(started.nodes.map((n) => n.sidecar.ready().catch(() => false)))
          ).filter(Boolean).length;
        let n = await ready();
        while (n < started.nodes.length && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
          n = await ready();
        }
        return n;
      },
      loseStore,
      retiredLeakCounts,
      stop() {
        stopping ??= stopAll();
        return stopping;
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
