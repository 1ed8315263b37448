// The CRD-object fuzz's system: the local API server with the CRDs as a
// cluster might have them from an old or foreign install (no schema, so
// nothing is refused for its shape and every generated object reaches the
// components), one Node, and the real `bin/pool-monitor sidecar` and
// `fulfiller` processes, each behind a recording proxy (every request and
// every write body) with its JSON log captured. The fuzzer writes as admin.
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiServer, type ApiServer } from '../../src/apiserver/server.ts';
import { spawnFulfiller, type FulfillerProcess } from '../support/fulfiller-process.ts';
import { startRecordingProxy, type RecordingProxy } from '../support/recording-proxy.ts';
import { schemalessCrds } from '../support/schemaless-crds.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { spawnSidecar, type SidecarProcess } from '../sidecar/harness.ts';
import {
  FUZZ_NAMESPACE,
  FUZZ_NODE,
  FUZZ_SUBNET,
  OTHER_NAMESPACE,
  type FuzzOp,
} from './generators.ts';

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const NNC = { group: 'acn.azure.com', version: 'v1alpha', plural: 'nodenetworkconfigs' };
const CSS = { group: 'acn.azure.com', version: 'v1alpha1', plural: 'clustersubnetstates' };

/** CPU seconds (user + system) a process has used, from /proc. */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks
  } catch {
    return 0;
  }
}

export interface FuzzSystem {
  server: ApiServer;
  objects: CustomObjectsApi;
  core: CoreV1Api;
  sidecar: SidecarProcess;
  sidecarUrl: string;
  sidecarProxy: RecordingProxy;
  fulfiller: FulfillerProcess;
  fulfillerProxy: RecordingProxy;
  /** Applies one generated object; returns the HTTP status the API server answered. */
  apply(op: FuzzOp): Promise<number>;
  close(): Promise<void>;
}

function statusOf(err: unknown): number {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : 0;
}

export async function startFuzzSystem(): Promise<FuzzSystem> {
  const dir = mkdtempSync(join(tmpdir(), 'crd-fuzz-'));
  const server = await startApiServer({ crdsDir: schemalessCrds(dir) });
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = kc.makeApiClient(CustomObjectsApi);
  await core.createNamespace({ body: { metadata: { name: OTHER_NAMESPACE } } });
  await core.createNode({ body: { metadata: { name: FUZZ_NODE } } });
  await core.patchNodeStatus(
    {
      name: FUZZ_NODE,
      body: { status: { addresses: [{ type: 'InternalIP', address: '10.224.0.4' }] } },
    },
    MERGE,
  );
  const sidecarProxy = await startRecordingProxy(server);
  const fulfillerProxy = await startRecordingProxy(server);
  const fulfiller = spawnFulfiller('fuzz-fulfiller', [
    '--kubeconfig',
    fulfillerProxy.kubeconfigPath,
    '--subnet',
    FUZZ_SUBNET,
    '--batch',
    '4',
    '--leader-elect',
    'false',
  ]);
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir);
  const sidecar = spawnSidecar([
    '--node-name',
    FUZZ_NODE,
    '--kubeconfig',
    sidecarProxy.kubeconfigPath,
    '--state-dir',
    stateDir,
    '--listen',
    '127.0.0.1:0',
  ]);
  const sidecarUrl = await sidecar.listening;
  await waitFor(
    'the sidecar ready',
    async () => (await fetch(`${sidecarUrl}/readyz`)).status === 200,
    30_000,
  );

  const nncTarget = (namespace: string, name: string) => ({ ...NNC, namespace, name });
  const upsert = async (
    create: () => Promise<unknown>,
    patch: () => Promise<unknown>,
  ): Promise<number> => {
    try {
      await patch();
      return 200;
    } catch (err) {
      if (statusOf(err) !== 404) return statusOf(err);
    }
    try {
      await create();
      await patch();
      return 201;
    } catch (err) {
      return statusOf(err);
    }
  };

  async function apply(op: FuzzOp): Promise<number> {
    try {
      switch (op.kind) {
        case 'nnc-spec':
          await objects.patchNamespacedCustomObject(
            { ...nncTarget(FUZZ_NAMESPACE, FUZZ_NODE), body: { spec: op.spec } },
            MERGE,
          );
          return 200;
        case 'nnc-status':
          await objects.patchNamespacedCustomObjectStatus(
            { ...nncTarget(FUZZ_NAMESPACE, FUZZ_NODE), body: { status: op.status } },
            MERGE,
          );
          return 200;
        case 'nnc-other':
          return await upsert(
            () =>
              objects.createNamespacedCustomObject({
                ...NNC,
                namespace: op.namespace,
                body: {
                  apiVersion: 'acn.azure.com/v1alpha',
                  kind: 'NodeNetworkConfig',
                  metadata: { name: op.name, namespace: op.namespace },
                  spec: op.spec,
                },
              }),
            () =>
              objects.patchNamespacedCustomObjectStatus(
                { ...nncTarget(op.namespace, op.name), body: { status: op.status } },
                MERGE,
              ),
          );
        case 'css':
          return await upsert(
            () =>
              objects.createNamespacedCustomObject({
                ...CSS,
                namespace: op.namespace,
                body: {
                  apiVersion: 'acn.azure.com/v1alpha1',
                  kind: 'ClusterSubnetState',
                  metadata: { name: op.name, namespace: op.namespace },
                },
              }),
            () =>
              objects.patchNamespacedCustomObjectStatus(
                { ...CSS, namespace: op.namespace, name: op.name, body: { status: op.status } },
                MERGE,
              ),
          );
        case 'pod':
          return await upsert(
            () =>
              core.createNamespacedPod({
                namespace: op.namespace,
                body: {
                  metadata: { name: op.name, namespace: op.namespace },
                  spec: op.spec,
                } as never,
              }),
            () =>
              core.patchNamespacedPodStatus(
                { name: op.name, namespace: op.namespace, body: { status: op.status } },
                MERGE,
              ),
          );
      }
    } catch (err) {
      return statusOf(err);
    }
  }

  return {
    server,
    objects,
    core,
    sidecar,
    sidecarUrl,
    sidecarProxy,
    fulfiller,
    fulfillerProxy,
    apply,
    async close() {
      sidecar.child.kill('SIGTERM');
      fulfiller.child.kill('SIGTERM');
      await Promise.all([sidecar.exited, fulfiller.exited]);
      await sidecarProxy.close();
      await fulfillerProxy.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { sleep, waitFor };
