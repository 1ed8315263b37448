// The CRD-object fuzz's system: the local API server with the CRDs as a
// cluster might have them from an old or foreign install (no schema, so
// nothing is refused for its shape and every generated object reaches the
// components), one Node, and the real `bin/pool-monitor sidecar` and
// `fulfiller` processes, each behind a recording proxy (every request and
// every write body) with its JSON log captured. The fuzzer writes as admin.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { spawnFulfiller, type FulfillerProcess } from '../support/fulfiller-process.ts';
import { startRecordingProxy, type RecordingProxy } from '../support/recording-proxy.ts';
import {
  cssObject,
  CSS_API,
  NNC_API,
  nncObject,
  startTestCluster,
} from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { spawnSidecar, type SidecarProcess } from '../sidecar/harness.ts';
import {
  FUZZ_NAMESPACE,
  FUZZ_NODE,
  FUZZ_SUBNET,
  OTHER_NAMESPACE,
  type FuzzOp,
} from './generators.ts';

// Each fuzz request closes its connection: client-node opens a new one per
// request (its agent is not reused) and the API server keeps an idle one for
// 30 s, so 10,000 objects at ~900 requests/s left ~20,000 sockets open in this
// process and ran it out of file descriptors (EMFILE: requests that never
// reached the server, /proc reads that failed).
const CLOSE = setHeaderOptions('Connection', 'close');
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch, CLOSE);
const NNC = NNC_API;
const CSS = CSS_API;

/**
 * CPU seconds (user + system) a process has used, from /proc. A reading that
 * fails throws (it once read as 0, and a difference of two readings then said
 * the process had looped hot).
 */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) throw new Error('no pid: the process did not start');
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks
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
  /**
   * Applies one generated object; returns the HTTP status the API server
   * answered, or 0 when none came (the client refused or failed to send it).
   */
  apply(op: FuzzOp): Promise<number>;
  /** Why requests got no answer (status 0), by error code, so a run can say. */
  unanswered: Map<string, number>;
  close(): Promise<void>;
}

const unanswered = new Map<string, number>();

function statusOf(err: unknown): number {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number') return code;
  const cause = (err as { cause?: { code?: unknown } }).cause?.code;
  const why = String(cause ?? code ?? (err as Error)?.name ?? 'unknown');
  unanswered.set(why, (unanswered.get(why) ?? 0) + 1);
  return 0;
}

export async function startFuzzSystem(): Promise<FuzzSystem> {
  unanswered.clear();
  // The admin's client on client-node's own connections: each fuzz request closes its own (CLOSE).
  const cluster = await startTestCluster({ crds: 'schemaless', pooled: false });
  const { server, core, objects, dir } = cluster;
  await core.createNamespace({ body: { metadata: { name: OTHER_NAMESPACE } } });
  await cluster.addNode(FUZZ_NODE, { internalIP: '10.224.0.4' });
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
              objects.createNamespacedCustomObject(
                {
                  ...NNC,
                  namespace: op.namespace,
                  body: nncObject(op.name, op.spec, op.namespace),
                },
                CLOSE,
              ),
            () =>
              objects.patchNamespacedCustomObjectStatus(
                { ...nncTarget(op.namespace, op.name), body: { status: op.status } },
                MERGE,
              ),
          );
        case 'css':
          return await upsert(
            () =>
              objects.createNamespacedCustomObject(
                {
                  ...CSS,
                  namespace: op.namespace,
                  body: cssObject(op.name, op.namespace),
                },
                CLOSE,
              ),
            () =>
              objects.patchNamespacedCustomObjectStatus(
                { ...CSS, namespace: op.namespace, name: op.name, body: { status: op.status } },
                MERGE,
              ),
          );
        case 'pod':
          return await upsert(
            () =>
              core.createNamespacedPod(
                {
                  namespace: op.namespace,
                  body: {
                    metadata: { name: op.name, namespace: op.namespace },
                    spec: op.spec,
                  } as never,
                },
                CLOSE,
              ),
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
    unanswered,
    async close() {
      sidecar.child.kill('SIGTERM');
      fulfiller.child.kill('SIGTERM');
      await Promise.all([sidecar.exited, fulfiller.exited]);
      await sidecarProxy.close();
      await fulfillerProxy.close();
      await cluster.close();
    },
  };
}

export { sleep, waitFor };
