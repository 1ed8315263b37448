// PodApi over @kubernetes/client-node 2.x: create, merge-patch the status
// subresource, delete with no grace period (the simulated kubelet has no
// containers to stop).
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { PodApi } from './driver.ts';

export function kubePodApi(kc: KubeConfig): PodApi {
  const core = kc.makeApiClient(CoreV1Api);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return {
    async createPod(pod) {
      await core.createNamespacedPod({
        namespace: pod.metadata?.namespace ?? 'default',
        body: pod,
      });
    },
    async setPodPhase(namespace, name, phase) {
      await core.patchNamespacedPodStatus(
        { name, namespace, body: { status: { phase } } },
        mergePatch,
      );
    },
    async deletePod(namespace, name) {
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    },
  };
}
