// The fulfiller's ports over the real API server (client-node 2.x): NNC
// status replace and read, NNC create (owned by its Node, with the addresses
// finalizer), its finalizers set and its delete (with a uid precondition),
// a Node's restore annotation (what its next NNC gets back),
// ClusterSubnetState create + status merge-patch, the
// fresh NNC and Node lists a new leader starts from, and whether a pod is
// still bound to a deleted node's name (its quarantine).
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import {
  CSS_KIND,
  CSS_PLURAL,
  CSS_VERSION,
  GROUP,
  NNC_KIND,
  NNC_PLURAL,
  NNC_VERSION,
} from '../nnc/types.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import type { NodeObject } from './nodes.ts';
import type { PodAddresses } from './pod-rescue.ts';
import { holdsAddresses, reportedIps } from '../kube/pod-status.ts';
import { ADDRESSES_FINALIZER, RESTORE_ANNOTATION } from './quarantine.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi, SubnetStateApi } from './ports.ts';

/** The annotation a new leader sets on every NNC it took over (docs/decisions/0022). */
export const TERM_ANNOTATION = 'pool-monitor.acn.azure.com/leader-term';

/** The label on every NNC the fulfiller creates. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'pool-monitor-fulfiller' };

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
  const patchStatus = async (name: string, status: Record<string, unknown>): Promise<void> => {
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
  };
  return {
    publish: (name, status) => patchStatus(name, { ...status }),
  };
}

export function kubeNncLifecycleApi(kc: KubeConfig, namespace: string): NncLifecycleApi {
  const api = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const base = { group: GROUP, version: NNC_VERSION, namespace, plural: NNC_PLURAL };
  return {
    async create(owner, restore) {
      const ownerReferences = owner.uid
        ? [{ apiVersion: 'v1', kind: 'Node', name: owner.name, uid: owner.uid }]
        : undefined;
      return (await api.createNamespacedCustomObject({
        ...base,
        body: {
          apiVersion: `${GROUP}/${NNC_VERSION}`,
          kind: NNC_KIND,
          metadata: {
            name: owner.name,
            namespace,
            labels: { ...MANAGED_BY },
            ...(restore ? { annotations: { [RESTORE_ANNOTATION]: JSON.stringify(restore) } } : {}),
            finalizers: [ADDRESSES_FINALIZER],
            ...(ownerReferences ? { ownerReferences } : {}),
          },
          spec: {},
        },
      })) as NodeNetworkConfig;
    },
    async markTerm(name, term) {
      return (await api.patchNamespacedCustomObject(
        { ...base, name, body: { metadata: { annotations: { [TERM_ANNOTATION]: term } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as NodeNetworkConfig;
    },
    async clearRestore(name) {
      return (await api.patchNamespacedCustomObject(
        { ...base, name, body: { metadata: { annotations: { [RESTORE_ANNOTATION]: null } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as NodeNetworkConfig;
    },
    // A merge patch naming the Node's uid (the API server refuses it, 422:
    // metadata.uid is immutable, when the name holds another Node now) and
    // its resourceVersion (the finalizers list is replaced whole).
    async setNodeRestore(node, restore) {
      const { name, uid, resourceVersion } = node.metadata ?? {};
      const others = (node.metadata?.finalizers ?? []).filter((f) => f !== ADDRESSES_FINALIZER);
      return (await core.patchNode(
        {
          name: name ?? '',
          body: {
            metadata: {
              uid,
              resourceVersion,
              finalizers: restore ? [...others, ADDRESSES_FINALIZER] : others,
              annotations: { [RESTORE_ANNOTATION]: restore ? JSON.stringify(restore) : null },
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as NodeObject;
    },
    // A merge patch replaces the whole list: the resourceVersion makes it
    // refuse (409) when someone changed the object since it was read.
    async setFinalizers(nnc, finalizers, owner) {
      const { name, resourceVersion } = nnc.metadata;
      const ownerReferences = owner?.uid
        ? [{ apiVersion: 'v1', kind: 'Node', name: owner.name, uid: owner.uid }]
        : undefined;
      return (await api.patchNamespacedCustomObject(
        {
          ...base,
          name,
          body: {
            metadata: {
              resourceVersion,
              finalizers,
              ...(ownerReferences ? { ownerReferences } : {}),
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as NodeNetworkConfig;
    },
    async delete(name, uid) {
      try {
        await api.deleteNamespacedCustomObject({
          ...base,
          name,
          ...(uid ? { body: { preconditions: { uid } } } : {}),
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
  };
}

export function kubeClusterListApi(kc: KubeConfig, namespace: string): ClusterListApi {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  return {
    async listNncs() {
      const list = (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: NNC_VERSION,
        namespace,
        plural: NNC_PLURAL,
      })) as { items?: NodeNetworkConfig[]; metadata?: { resourceVersion?: string } };
      return {
        items: list.items ?? [],
        ...(list.metadata?.resourceVersion
          ? { resourceVersion: list.metadata.resourceVersion }
          : {}),
      };
    },
    async listNodes() {
      const list = await core.listNode();
      return {
        items: (list.items ?? []) as NodeObject[],
        ...(list.metadata?.resourceVersion
          ? { resourceVersion: list.metadata.resourceVersion }
          : {}),
      };
    },
    // A list by name: the fulfiller's grant on Nodes is list and watch.
    async getNode(node) {
      const list = await core.listNode({ fieldSelector: `metadata.name=${node}`, limit: 1 });
      return (list.items ?? [])[0] as NodeObject | undefined;
    },
    // Pages of 500, as client-go's pager reads a large list: a new leader
    // reads this once, before its first allocation (pod-rescue.ts).
    async listPodAddresses() {
      const out: PodAddresses[] = [];
      let next: string | undefined;
      do {
        const page = await core.listPodForAllNamespaces({
          limit: 500,
          ...(next ? { _continue: next } : {}),
        });
        for (const pod of page.items ?? []) {
          if (!holdsAddresses(pod)) continue;
          const ips = reportedIps(pod);
          if (ips.length > 0) out.push({ node: pod.spec!.nodeName!, ips });
        }
        next = page.metadata?._continue || undefined;
      } while (next);
      return out;
    },
    // One pod is enough to know: `limit=1` keeps the answer small on a large cluster.
    async anyPodOn(node) {
      const list = await core.listPodForAllNamespaces({
        fieldSelector: `spec.nodeName=${node}`,
        limit: 1,
      });
      return (list.items ?? []).length > 0;
    },
  };
}
