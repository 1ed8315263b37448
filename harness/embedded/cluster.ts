// The embedded cluster, assembled from the real pieces: the local API server
// as strict as a real cluster (RBAC, tokens required, the CRDs, service
// accounts, RBAC and admission policies of manifests/ applied: access.ts),
// the namespaces, one Ready Node (InternalIP, kubelet version, room for 250
// pods) per node (node-objects.ts), the fulfiller on the pod subnet (which
// creates every Node's NNC, as on a real cluster), per node the real sidecar
// and a simulated kubelet/CNI (node-agents.ts), and a scheduler that binds
// pods created without a node. The fulfiller runs as its service account and
// each sidecar with its own token bound to its Node, so the product gets
// exactly what its manifests grant; the harness (scheduler, kubelets,
// workload driver, the human's kubectl) uses the admin kubeconfig. Everyone
// shares one root logger to keep per-node overhead small, and one keep-alive
// connection pool (client-node alone would open a connection per request).
//
// Start is a short list of named steps: start the API server, connect as the
// admin, apply the manifests, register the nodes, start the fulfiller, start
// the nodes' sidecars and kubelets, start the scheduler. Each step that
// leaves something running pushes how to stop it onto one stop list
// (src/sidecar/stop-steps.ts), run last-in-first-out, each step named in the
// log and bounded in time: scheduler, kubelets, (with netns: the pods'
// DELs), sidecars, (the namespaces), fulfiller, connection pool, API
// server. A start that fails half way runs the same
// list. The fulfiller and sidecars run in this process unless a component
// host says otherwise (the chaos harness runs them as processes:
// components.ts).
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import { startApiServer, type ApiServer } from '../apiserver/server.ts';
import { grantProductAccess, type ProductAccess } from './access.ts';
import type { BackendFactory } from '../../src/fulfiller/backend.ts';
import { makeFulfillerConfig, type FulfillerConfig } from '../../src/fulfiller/config.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { loadKubeConfig } from '../../src/kube/config.ts';
import type { SharedDispatchers } from '../../src/kube/shared-dispatcher.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { LeakCounts } from '../../src/sidecar/leaks.ts';
import type { RunSidecarDeps } from '../../src/sidecar/run.ts';
import { StopSteps } from '../../src/sidecar/stop-steps.ts';
import type { PodEndedWaiting, PodWait } from '../kubelet/kubelet.ts';
import { startSimScheduler, type RunningSimScheduler } from '../scheduler/scheduler.ts';
import { inProcessHost, type ComponentHost, type ControlPlane } from './components.ts';
import { NodeAgents, type EmbeddedNode } from './node-agents.ts';
import { createNodeObjects } from './node-objects.ts';
import { NodeNetworks, nncPrimaryAddress } from './node-networks.ts';

export { inBatches } from './batches.ts';
export { embeddedNodeStatus, NODE_PODS, nodeAddress } from './node-objects.ts';
export type { EmbeddedNode } from './node-agents.ts';

export const WORKLOAD_NAMESPACE = 'workload';

/** The binding that makes requests without credentials cluster-admin (anonymousAdmin). */
export const ANONYMOUS_ADMIN_BINDING = 'embedded-anonymous-cluster-admin';

/**
 * How long one stop step may take before the next one runs: a sidecar's own
 * stop is bounded at 8 s, a component process's by its host.
 */
export const STOP_STEP_BOUND_MS = 30_000;

export interface EmbeddedClusterOptions {
  nodeNames: readonly string[];
  /** Pod subnet of the fulfiller's CIDR backend (the first of podSubnets). */
  podSubnet: string;
  /**
   * Every pod subnet of the CIDR backend, one per address family (IPv4
   * first; dual-stack: two). Absent: podSubnet alone.
   */
  podSubnets?: readonly string[];
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
  onEndedWaiting?: (ended: PodEndedWaiting) => void;
  /**
   * Simulated leaks: the kubelets drop this share of their CNI DELs (seeded
   * per node) and the sidecars reclaim after `graceSeconds`.
   */
  leaks?: { dropReleaseRate: number; graceSeconds: number; seed?: number };
  /**
   * Real networks (embedded --netns, root): each node a network namespace,
   * each pod one with the real plugin chain (node-networks.ts).
   */
  netns?: boolean;
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
   * Pods the kubelets have not told the fate of yet (running, or ended
   * waiting): a deleted pod leaves the API before its kubelet has wound its
   * setup down and said so.
   */
  settingUp(): Promise<number>;
  /**
   * The node's IP store is lost: its sidecar stops, the store files are
   * deleted, and a new sidecar starts on the same port (the kubelet's CNI
   * endpoint); resolves once the new one follows the pods (or after 15 s).
   */
  loseStore(name: string): Promise<void>;
  /** What sidecars that were replaced by loseStore() had reclaimed and adopted. */
  readonly retiredLeakCounts: LeakCounts[];
  /** With netns: the nodes' and pods' namespaces (removed by stop()). */
  networks: NodeNetworks | undefined;
  stop(): Promise<void>;
}

/**
 * The fulfiller settings of the embedded run: exhaustion at one batch of free
 * addresses, held at least 10 s so a short scenario still shows the recovery.
 */
export function embeddedFulfillerConfig(
  podSubnet: string | readonly string[],
  overrides: Partial<FulfillerConfig> = {},
): FulfillerConfig {
  const batch = overrides.scaler?.batchSize ?? 16;
  const subnets = typeof podSubnet === 'string' ? [podSubnet] : [...podSubnet];
  return makeFulfillerConfig({
    subnet: subnets[0] ?? '',
    subnets,
    exhaustionThreshold: batch,
    recoveryMargin: batch,
    exhaustionHoldMs: 10_000,
    workers: 8,
    minIntervalMs: 50,
    ...overrides,
  });
}

/** Watch history the embedded API server keeps for `nodes` nodes (at least the server's 10,000). */
export function embeddedHistoryLimit(nodes: number): number {
  return Math.max(10_000, nodes * 150);
}

export async function startEmbeddedCluster(opts: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
  const log = opts.logger.child({ component: 'embedded' });
  const stops = new StopSteps();
  try {
    const server = await startServer(opts, stops);
    const admin = connectAdmin(server, stops);
    const access = await applyManifests(admin.kc, admin.connections, opts, log);
    await registerNodes(admin.kc, opts, log);
    const fulfillerConfig = embeddedFulfillerConfig(
      opts.podSubnets ?? opts.podSubnet,
      opts.fulfiller,
    );
    const host = opts.host ?? inProcessHost(opts.sidecar);
    // What the host itself runs ends once the components in it stopped.
    if (host.close) stops.push('component host', () => host.close?.());
    const controlPlane = await startControlPlane(host, access, fulfillerConfig, opts, stops);
    const { agents, networks } = await startNodes(host, access, admin.kc, opts, stops);
    log.info('sidecars and kubelets started', { nodes: agents.nodes.length });
    const scheduler = await startScheduler(admin.kc, opts, stops);
    let stopping: Promise<void> | undefined;
    return {
      server,
      kc: admin.kc,
      access,
      fulfiller: controlPlane.inProcess,
      controlPlane,
      fulfillerConfig,
      scheduler,
      nodes: agents.nodes,
      whenReady: (timeoutMs) => agents.whenReady(timeoutMs),
      settingUp: () => agents.settingUp(),
      loseStore: (name) => agents.loseStore(name),
      retiredLeakCounts: agents.retiredLeakCounts,
      networks,
      stop() {
        stopping ??= (async () => {
          agents.beginStop();
          await stops.run(log, STOP_STEP_BOUND_MS);
        })();
        return stopping;
      },
    };
  } catch (err) {
    await stops.run(log, STOP_STEP_BOUND_MS);
    throw err;
  }
}

/** Step 1: the local API server; closed last. */
async function startServer(opts: EmbeddedClusterOptions, stops: StopSteps): Promise<ApiServer> {
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
  stops.push('api server', () => server.close());
  return server;
}

/**
 * Step 2: the admin's configuration. Every in-process client shares one
 * keep-alive connection pool (the product's, shared-dispatcher.ts), whatever
 * its token; thousands of watches get their own.
 */
function connectAdmin(
  server: ApiServer,
  stops: StopSteps,
): { kc: KubeConfig; connections: SharedDispatchers } {
  const loaded = loadKubeConfig({
    kubeconfig: server.kubeconfigPath,
    watchConnections: 'own',
    maxConnections: Infinity, // a thousand nodes' requests in one process
  });
  stops.push('connection pool', () => loaded.connections.destroy());
  return { kc: loaded.kc, connections: loaded.connections };
}

/** Step 3: manifests/ applied (and, for a human's kubectl, anonymous as admin). */
async function applyManifests(
  kc: KubeConfig,
  connections: SharedDispatchers,
  opts: EmbeddedClusterOptions,
  log: Logger,
): Promise<ProductAccess> {
  const access = await grantProductAccess(kc, { connections });
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
  return access;
}

/** Step 4: the workload's namespace and one Ready Node per name. */
async function registerNodes(
  kc: KubeConfig,
  opts: EmbeddedClusterOptions,
  log: Logger,
): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: WORKLOAD_NAMESPACE } } });
  const providerID = opts.backend?.providerID;
  await createNodeObjects(kc, opts.nodeNames, {
    limit: opts.setupConcurrency ?? 32,
    ...(providerID ? { providerID } : {}),
  });
  log.info('nodes created', { nodes: opts.nodeNames.length });
}

/** Step 5: the fulfiller, as its service account; it creates the NNCs. */
async function startControlPlane(
  host: ComponentHost,
  access: ProductAccess,
  config: FulfillerConfig,
  opts: EmbeddedClusterOptions,
  stops: StopSteps,
): Promise<ControlPlane> {
  const controlPlane = await host.startControlPlane({
    kc: await access.kubeConfig('fulfiller'),
    config,
    logger: opts.logger,
    events: opts.events ?? true,
    ...(opts.backend ? { backend: opts.backend.factory } : {}),
  });
  stops.push('fulfiller', () => controlPlane.stop());
  return controlPlane;
}

/**
 * Step 6: per node its sidecar and kubelet (with netns, first the node
 * namespaces); kubelets stop before sidecars, the pods still attached get
 * their DEL in between, the namespaces go last.
 */
async function startNodes(
  host: ComponentHost,
  access: ProductAccess,
  kc: KubeConfig,
  opts: EmbeddedClusterOptions,
  stops: StopSteps,
): Promise<{ agents: NodeAgents; networks: NodeNetworks | undefined }> {
  const stateRoot = opts.stateRoot ?? join(opts.runDir, 'state');
  let networks: NodeNetworks | undefined;
  if (opts.netns === true) {
    networks = await NodeNetworks.create(
      opts.nodeNames,
      stateRoot,
      opts.logger,
      nncPrimaryAddress(kc),
    );
    // Removed last of the nodes: after the sidecars stopped.
    const nets = networks;
    stops.push('node namespaces', async () => void (await nets.removeAll()));
  }
  const agents = new NodeAgents({
    nodeNames: opts.nodeNames,
    stateRoot,
    host,
    access,
    kc,
    logger: opts.logger,
    events: opts.events ?? true,
    limit: opts.setupConcurrency ?? 32,
    ...(opts.onRunning ? { onRunning: opts.onRunning } : {}),
    ...(opts.onEndedWaiting ? { onEndedWaiting: opts.onEndedWaiting } : {}),
    ...(opts.leaks ? { leaks: opts.leaks } : {}),
    ...(networks ? { networks } : {}),
  });
  // Pushed before any node starts: a start that fails half way stops the ones it started.
  stops.push('sidecars', () => agents.stopSidecars());
  // The pods still attached get their DEL while the sidecars still answer.
  if (networks) stops.push('pod networks', () => networks.tearDownPods());
  stops.push('kubelets', () => agents.stopKubelets());
  await agents.startAll();
  return { agents, networks };
}

/** Step 7: the scheduler binds pods created without a node; it stops first. */
async function startScheduler(
  kc: KubeConfig,
  opts: EmbeddedClusterOptions,
  stops: StopSteps,
): Promise<RunningSimScheduler> {
  const scheduler = startSimScheduler({ kc, logger: opts.logger, events: opts.events ?? true });
  stops.push('scheduler', () => scheduler.stop());
  await scheduler.whenSynced();
  return scheduler;
}
