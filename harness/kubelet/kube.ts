// The simulated kubelet's Kubernetes side: a restartable informer on the pods
// bound to one node (field selector spec.nodeName, as a real kubelet), and
// the status write that marks a pod Running with its IP. The write is a merge
// patch of the status subresource carrying the resourceVersion the kubelet
// saw, so it never overwrites a completion it has not seen: on conflict it
// re-reads the pod and, if it finished meanwhile, says so instead.
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { isIP } from 'node:net';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { watchResource, type ResourceWatch } from '../../src/kube/watch.ts';
import type { Logger } from '../../src/log/logger.ts';
import { apiErrorInfo } from '../../src/kube/errors.ts';
import type { PodStatusWriter, StatusWriteResult } from './kubelet.ts';

const TERMINAL = new Set(['Succeeded', 'Failed']);

/**
 * The pod's addresses as the kubelet reports them: the first of the node's
 * primary family, then the first of the other family, nothing more
 * (kubelet's sortPodIPs, pkg/kubelet/kubelet_pods.go: "Pick out the first
 * returned IP of the same IP family as the node IP first, followed by the
 * first IP of the opposite IP family"); the API allows at most one value
 * of each family, and `podIP` is the first
 * (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#PodStatus).
 * Pure.
 */
export function podIpsOf(ips: readonly string[], primary: 4 | 6 = 4): string[] {
  const out: string[] = [];
  for (const family of [primary, primary === 4 ? 6 : 4]) {
    const ip = ips.find((x) => isIP(x) === family);
    if (ip !== undefined) out.push(ip);
  }
  return out;
}

/** The status a started pod gets: Running, Ready, with its IPs (podIpsOf). Pure. */
export function runningStatus(ips: string[], now: Date, primary: 4 | 6 = 4): V1Pod['status'] {
  const podIPs = podIpsOf(ips, primary);
  return {
    phase: 'Running',
    podIP: podIPs[0],
    podIPs: podIPs.map((ip) => ({ ip })),
    startTime: now,
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Initialized', status: 'True' },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
      { type: 'Ready', status: 'True', lastTransitionTime: now },
    ],
  };
}

/** The two pod-status calls the status writer makes (client-node's, or plain HTTP). */
export interface PodStatusCalls {
  /** A merge patch of the pod's status subresource. Throws the API's error (statusCode). */
  patchPodStatus(namespace: string, name: string, body: object): Promise<void>;
  readPodStatus(namespace: string, name: string): Promise<V1Pod>;
}

/** The calls through client-node's CoreV1Api. */
export function clientPodStatusCalls(kc: KubeConfig): PodStatusCalls {
  const core = kc.makeApiClient(CoreV1Api);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return {
    async patchPodStatus(namespace, name, body) {
      await core.patchNamespacedPodStatus({ name, namespace, body }, mergePatch);
    },
    readPodStatus: (namespace, name) => core.readNamespacedPodStatus({ name, namespace }),
  };
}

/**
 * The status write: a merge patch carrying the resourceVersion the kubelet
 * saw; on 409 the pod is read again (finished, gone or just written).
 */
export function podStatusWriter(
  calls: PodStatusCalls,
  now: () => Date = () => new Date(),
): PodStatusWriter {
  return {
    async setRunning(pod, ips): Promise<StatusWriteResult> {
      const name = pod.metadata?.name ?? '';
      const namespace = pod.metadata?.namespace ?? 'default';
      let resourceVersion = pod.metadata?.resourceVersion;
      for (let attempt = 0; attempt < 5; attempt += 1) {
        try {
          await calls.patchPodStatus(namespace, name, {
            metadata: resourceVersion ? { resourceVersion } : {},
            status: runningStatus(ips, now()),
          });
          return 'ok';
        } catch (err) {
          const status = apiErrorInfo(err).statusCode;
          if (status === 404) return 'gone';
          if (status !== 409) throw err;
        }
        // Conflict: someone else wrote the pod. Look at it again.
        let fresh: V1Pod;
        try {
          fresh = await calls.readPodStatus(namespace, name);
        } catch (err) {
          if (apiErrorInfo(err).statusCode === 404) return 'gone';
          throw err;
        }
        if (fresh.metadata?.uid && pod.metadata?.uid && fresh.metadata.uid !== pod.metadata.uid) {
          return 'gone'; // same name, another pod
        }
        if (TERMINAL.has(fresh.status?.phase ?? '') || fresh.metadata?.deletionTimestamp) {
          return 'finished';
        }
        resourceVersion = fresh.metadata?.resourceVersion;
      }
      throw new Error(`pod ${namespace}/${name}: status write kept conflicting`);
    },
  };
}

export interface NodePodHandler {
  onPod(pod: V1Pod): void;
  onPodDeleted(pod: V1Pod): void;
}

export interface WatchNodePodsOptions {
  kc: KubeConfig;
  nodeName: string;
  handler: NodePodHandler;
  logger: Logger;
  /** Only this namespace; every namespace when absent. */
  namespace?: string;
  labelSelector?: string;
}

/** Feeds the pods bound to `nodeName` into `handler`; stop() ends the watch. */
export function watchNodePods(options: WatchNodePodsOptions): ResourceWatch<V1Pod> {
  const core = options.kc.makeApiClient(CoreV1Api);
  const fieldSelector = `spec.nodeName=${options.nodeName}`;
  const { namespace, labelSelector } = options;
  const watch = watchResource<V1Pod>({
    kc: options.kc,
    path: namespace ? `/api/v1/namespaces/${namespace}/pods` : '/api/v1/pods',
    listFn: () =>
      namespace
        ? core.listNamespacedPod({ namespace, fieldSelector, labelSelector })
        : core.listPodForAllNamespaces({ fieldSelector, labelSelector }),
    fieldSelector,
    ...(labelSelector ? { labelSelector } : {}),
    logger: options.logger,
    name: `pods@${options.nodeName}`,
  });
  watch.events$.subscribe((event) => {
    if (event.type === 'add' || event.type === 'update') options.handler.onPod(event.object);
    else if (event.type === 'delete') options.handler.onPodDeleted(event.object);
  });
  return watch;
}
