// The one local test cluster the integration, process, fuzz and Azure tests
// start: the local API server (harness/apiserver) with the product's CRDs
// from manifests/ (or as an old or foreign install has them, schemaless),
// the admin's client-node APIs for a test's own fixtures, Node and NNC
// builders on the src/nnc coordinates, the spec writes and waits a sidecar's
// part takes (setSpec, nncWithIps), and one close() that tears it down.
// Built on it: the RBAC-on cluster with the sidecar's and the fulfiller's
// identities (rbac.ts, which the sidecar's harness and the fulfiller's
// integration and process tests start), the Azure world (azure-cluster.ts),
// the TLS connection loads (tls-load.ts), the CRD fuzz's system
// (test/fuzz/harness.ts) and the interleave explorer's world
// (test/fulfiller/interleave/world.ts).
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
} from '@kubernetes/client-node';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startApiServer,
  type ApiServer,
  type ApiServerOptions,
} from '../../harness/apiserver/server.ts';
import { loadKubeConfig } from '../../src/kube/config.ts';
import type { SharedDispatchers } from '../../src/kube/shared-dispatcher.ts';
import { silentLogger } from '../../src/log/logger.ts';
import {
  CSS_KIND,
  CSS_PLURAL,
  CSS_VERSION,
  DEFAULT_NAMESPACE,
  GROUP,
  NNC_KIND,
  NNC_PLURAL,
  NNC_VERSION,
  dynamicContainers,
  type NncSpec,
  type NodeNetworkConfig,
} from '../../src/nnc/types.ts';
import { schemalessCrds } from './schemaless-crds.ts';
import { CRDS_DIR, waitFor } from './wait.ts';

/** Where the product's objects live (the tests' NNCs and CSSs). */
export const NS = DEFAULT_NAMESPACE;

/** The NNC resource for CustomObjectsApi calls (add `namespace`, `name`, `body`). */
export const NNC_API = { group: GROUP, version: NNC_VERSION, plural: NNC_PLURAL } as const;
/** The ClusterSubnetState resource, likewise. */
export const CSS_API = { group: GROUP, version: CSS_VERSION, plural: CSS_PLURAL } as const;
/** The NNCs in NS, likewise (add `name`, `body`). */
export const NNC = { ...NNC_API, namespace: NS } as const;
/** The ClusterSubnetStates in NS, likewise. */
export const CSS = { ...CSS_API, namespace: NS } as const;
export const NNC_API_VERSION = `${GROUP}/${NNC_VERSION}`;
export const CSS_API_VERSION = `${GROUP}/${CSS_VERSION}`;

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A NodeNetworkConfig as a client creates it (no status; `spec` may be malformed on purpose). */
export function nncObject(name: string, spec: unknown, namespace: string = NS): NodeNetworkConfig {
  const metadata = { name, namespace };
  return { apiVersion: NNC_API_VERSION, kind: NNC_KIND, metadata, spec: spec as NncSpec };
}

/** A ClusterSubnetState as a client creates it (its status is a subresource). */
export function cssObject(
  name: string,
  namespace: string = NS,
): { apiVersion: string; kind: string; metadata: { name: string; namespace: string } } {
  return { apiVersion: CSS_API_VERSION, kind: CSS_KIND, metadata: { name, namespace } };
}

/** Every address (primary and secondaries) in the NNC's dynamic containers; none without an NNC. */
export function addressesOf(nnc: NodeNetworkConfig | undefined): string[] {
  if (!nnc) return [];
  return dynamicContainers(nnc).flatMap((nc) => [
    ...(nc.primaryIP ? [nc.primaryIP] : []),
    ...(nc.ipAssignments ?? []).map((a) => a.ip),
  ]);
}

export interface TestClusterOptions extends ApiServerOptions {
  /**
   * The CRDs the server starts with: the product's (default), the same with
   * their schemas replaced by "anything goes" (schemaless-crds.ts), or none
   * (a test that applies them itself, as rbac.ts applies manifests/).
   */
  crds?: 'manifests' | 'schemaless' | 'none';
  /**
   * The admin's client on client-node's own connection handling instead of
   * the product's keep-alive pool (default true: pooled).
   */
  pooled?: boolean;
}

export interface NodeOptions {
  labels?: Record<string, string>;
  providerID?: string;
  internalIP?: string;
  /** status.allocatable.pods, as the kubelet reports it. */
  allocatablePods?: string;
}

export interface TestCluster {
  server: ApiServer;
  /** The admin's (system:masters): the test's own fixtures. */
  kc: KubeConfig;
  core: CoreV1Api;
  objects: CustomObjectsApi;
  /** The admin's keep-alive pool (absent with `pooled: false`), for KubeConfigs that share it. */
  connections?: SharedDispatchers;
  /** A temporary directory for the test's files, removed by close(). */
  dir: string;
  /** Creates a Node, with what is given of labels, providerID, InternalIP address and allocatable pods. */
  addNode(name: string, options?: NodeOptions): Promise<V1Node>;
  /** Creates the node's NNC in `namespace` (default kube-system). */
  createNnc(name: string, spec: unknown, namespace?: string): Promise<void>;
  /** The node's NNC, or undefined when there is none. */
  getNnc(name: string, namespace?: string): Promise<NodeNetworkConfig | undefined>;
  /**
   * Replaces the spec of the node's NNC in NS, as a sidecar would; a conflict
   * (written meanwhile) or a missing NNC is tried again until `timeoutMs`.
   * With `create`, a missing NNC is created with that spec instead.
   */
  setSpec(
    name: string,
    spec: Record<string, unknown>,
    options?: { create?: boolean; timeoutMs?: number },
  ): Promise<void>;
  /** The node's NNC once its first dynamic container holds `count` addresses (waits for it). */
  nncWithIps(name: string, count: number, timeoutMs?: number): Promise<NodeNetworkConfig>;
  close(): Promise<void>;
}

export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const { crds = 'manifests', pooled = true, ...serverOptions } = options;
  const dir = mkdtempSync(join(tmpdir(), 'pool-monitor-test-'));
  let server: ApiServer;
  try {
    server = await startApiServer({
      logger: silentLogger(),
      kubeconfigPath: join(dir, 'admin.kubeconfig'),
      ...(crds === 'none'
        ? {}
        : { crdsDir: crds === 'schemaless' ? schemalessCrds(dir) : CRDS_DIR }),
      ...serverOptions,
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let kc: KubeConfig;
  let connections: SharedDispatchers | undefined;
  if (pooled) ({ kc, connections } = loadKubeConfig({ kubeconfig: server.kubeconfigPath }));
  else (kc = new KubeConfig()).loadFromFile(server.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = kc.makeApiClient(CustomObjectsApi);
  const getNnc = async (name: string, namespace = NS) =>
    (await objects
      .getNamespacedCustomObject({ ...NNC_API, namespace, name })
      .catch(() => undefined)) as NodeNetworkConfig | undefined;
  return {
    server,
    kc,
    core,
    objects,
    ...(connections ? { connections } : {}),
    dir,
    async addNode(name, { labels, providerID, internalIP, allocatablePods } = {}) {
      const node = await core.createNode({
        body: {
          metadata: { name, ...(labels ? { labels } : {}) },
          ...(providerID ? { spec: { providerID } } : {}),
        },
      });
      const status = {
        ...(allocatablePods === undefined ? {} : { allocatable: { pods: allocatablePods } }),
        ...(internalIP ? { addresses: [{ type: 'InternalIP', address: internalIP }] } : {}),
      };
      if (Object.keys(status).length > 0)
        await core.patchNodeStatus({ name, body: { status } }, MERGE);
      return node;
    },
    async createNnc(name, spec, namespace = NS) {
      await objects.createNamespacedCustomObject({
        ...NNC_API,
        namespace,
        body: nncObject(name, spec, namespace),
      });
    },
    getNnc,
    async setSpec(name, spec, { create = false, timeoutMs } = {}) {
      await waitFor(
        `the spec of ${name}`,
        async () => {
          const cur = await getNnc(name);
          if (cur)
            await objects.replaceNamespacedCustomObject({ ...NNC, name, body: { ...cur, spec } });
          else if (create)
            await objects.createNamespacedCustomObject({ ...NNC, body: nncObject(name, spec) });
          else return undefined;
          return true;
        },
        timeoutMs,
      );
    },
    nncWithIps: (name, count, timeoutMs) =>
      waitFor(
        `${name} with ${count} IPs`,
        async () => {
          const o = await getNnc(name);
          return o && (dynamicContainers(o)[0]?.ipAssignments?.length ?? -1) === count
            ? o
            : undefined;
        },
        timeoutMs,
      ),
    async close() {
      try {
        await server.close();
        await connections?.destroy();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
