// The fulfiller's ports over the real API server (client-node 2.x): NNC
// status replace and read, ClusterSubnetState create + status merge-patch,
// and the node's InternalIP for `nodeIP`.
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { CSS_KIND, CSS_PLURAL, CSS_VERSION, GROUP, NNC_PLURAL, NNC_VERSION } from '../nnc/types.ts';
import { isConflict } from '../kube/errors.ts';
import type { NncStatusApi, NodeIpLookup, SubnetStateApi } from './ports.ts';

export function kubeNncStatusApi(kc: KubeConfig, namespace: string): NncStatusApi {
  const api = kc.makeApiClient(CustomObjectsApi);
  const base = { group: GROUP, version: NNC_VERSION, namespace, plural: NNC_PLURAL };
  return {
    async get(name) {
      return (await api.getNamespacedCustomObject({ ...base, name })) as NodeNetworkConfig;
    },
    async replaceStatus(nnc) {
      return (await api.replaceNamespacedCustomObjectStatus({
        ...base,
        name: nnc.metadata.name,
        body: nnc,
      })) as NodeNetworkConfig;
    },
  };
}

export function kubeSubnetStateApi(kc: KubeConfig, namespace: string): SubnetStateApi {
  const api = kc.makeApiClient(CustomObjectsApi);
  const base = { group: GROUP, version: CSS_VERSION, namespace, plural: CSS_PLURAL };
  const known = new Set<string>();
  return {
    async publish(name, status) {
      if (!known.has(name)) {
        try {
          await api.createNamespacedCustomObject({
            ...base,
            body: {
              apiVersion: `${GROUP}/${CSS_VERSION}`,
              kind: CSS_KIND,
              metadata: { name, namespace },
            },
          });
        } catch (err) {
          if (!isConflict(err)) throw err; // 409: it exists already
        }
        known.add(name);
      }
      try {
        await api.patchNamespacedCustomObjectStatus(
          { ...base, name, body: { status } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (err) {
        known.delete(name); // deleted behind our back? create it again next time
        throw err;
      }
    },
  };
}

/** The node's InternalIP, or undefined when the Node object is missing or has none. */
export function kubeNodeIpLookup(kc: KubeConfig): NodeIpLookup {
  const api = kc.makeApiClient(CoreV1Api);
  return async (node) => {
    try {
      const n = await api.readNode({ name: node });
      return n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    } catch {
      return undefined;
    }
  };
}
