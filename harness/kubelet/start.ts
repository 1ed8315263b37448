// One call to run a simulated kubelet for a node: the kubelet itself, wired
// to the node's sidecar over HTTP and to the API server through the pod
// informer (or the lean pod watch) and status writer. stop() ends the watch, then the kubelet.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../src/log/logger.ts';
import type { BackoffOptions } from '../../src/kube/backoff.ts';
import { httpCniClient, type CniClient } from './cni.ts';
import {
  clientPodStatusCalls,
  podStatusWriter,
  watchNodePods,
  type PodStatusCalls,
} from './kube.ts';
import { SimKubelet, type PodEndedWaiting, type PodWait } from './kubelet.ts';
import { leanPodWatch, type PodListWatch } from './pod-watch.ts';

export interface StartSimKubeletOptions {
  kc: KubeConfig;
  nodeName: string;
  /** The node's sidecar, e.g. http://127.0.0.1:PORT (a function: asked on every call). */
  sidecarUrl: string | (() => string);
  /** The pods' CNI instead of calls to `sidecarUrl` (embedded --netns: the real plugin chain). */
  cni?: CniClient;
  logger: Logger;
  /** Pods of this namespace only; every namespace when absent. */
  namespace?: string;
  /** Which pods to serve; every pod on the node by default, as a real kubelet. */
  labelSelector?: string;
  /** The node's InternalIP, for host-network pods. */
  nodeIp?: string;
  /** Share of CNI DELs dropped (simulated leaks), drawn with `random`. */
  dropReleaseRate?: number;
  random?: () => number;
  concurrency?: number;
  backoff?: BackoffOptions;
  onRunning?: (wait: PodWait) => void;
  onEndedWaiting?: (ended: PodEndedWaiting) => void;
  /**
   * How the kubelet patches and reads pod status: client-node's CoreV1Api
   * with `kc` by default; the embedded cluster shares one plain-HTTP client
   * among its kubelets (harness/embedded/http-pod-api.ts).
   */
  statusCalls?: PodStatusCalls;
  /**
   * Where the kubelet lists and watches its pods: client-node's informer
   * with `kc` by default; the embedded cluster's plain-HTTP client
   * (pod-watch.ts) when given.
   */
  podSource?: PodListWatch;
}

export interface RunningSimKubelet {
  kubelet: SimKubelet;
  /** Resolves once the pod watch has listed the node's pods. */
  whenSynced(): Promise<void>;
  stop(): Promise<void>;
}

export function startSimKubelet(options: StartSimKubeletOptions): RunningSimKubelet {
  const kubelet = new SimKubelet({
    nodeName: options.nodeName,
    cni: options.cni ?? httpCniClient(options.sidecarUrl),
    writer: podStatusWriter(options.statusCalls ?? clientPodStatusCalls(options.kc)),
    logger: options.logger,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.onRunning ? { onRunning: options.onRunning } : {}),
    ...(options.onEndedWaiting ? { onEndedWaiting: options.onEndedWaiting } : {}),
    ...(options.nodeIp ? { nodeIp: options.nodeIp } : {}),
    ...(options.dropReleaseRate ? { dropReleaseRate: options.dropReleaseRate } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  const selector = options.labelSelector;
  const watch = options.podSource
    ? leanPodWatch({
        source: options.podSource,
        query: {
          fieldSelector: `spec.nodeName=${options.nodeName}`,
          ...(options.namespace ? { namespace: options.namespace } : {}),
          ...(selector ? { labelSelector: selector } : {}),
        },
        handler: kubelet,
        logger: options.logger,
        ...(options.backoff ? { backoff: options.backoff } : {}),
      })
    : watchNodePods({
        kc: options.kc,
        nodeName: options.nodeName,
        handler: kubelet,
        logger: options.logger,
        ...(options.namespace ? { namespace: options.namespace } : {}),
        ...(selector ? { labelSelector: selector } : {}),
      });
  return {
    kubelet,
    whenSynced: () => watch.whenSynced(),
    async stop() {
      await watch.stop();
      await kubelet.stop();
    },
  };
}
