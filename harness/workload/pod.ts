// The pods the workload creates: already scheduled (`spec.nodeName` set, as
// the scheduler would leave them), labelled so the harness and kubectl can
// find them, and stamped with their creation time in milliseconds so the
// kubelet can measure the wait from scheduling to IP precisely (the API
// server's creationTimestamp has one-second resolution).
import type { V1Pod } from '@kubernetes/client-node';

export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'pool-monitor-sim';
export const LABEL_GROUP = 'sim.pool-monitor/group';
export const LABEL_SCENARIO = 'sim.pool-monitor/scenario';
export const ANNOTATION_SCHEDULED_AT = 'sim.pool-monitor/scheduled-at-ms';
/** Label selector matching every pod the workload creates. */
export const WORKLOAD_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

export interface WorkloadPodParams {
  name: string;
  namespace: string;
  /** Absent: created without a node, for the scheduler. */
  node?: string;
  group: string;
  scenario: string;
  /** Clock reading at creation, ms. */
  scheduledAtMs: number;
}

export function workloadPod(p: WorkloadPodParams): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: p.namespace,
      labels: {
        [LABEL_MANAGED_BY]: MANAGED_BY,
        [LABEL_GROUP]: p.group,
        [LABEL_SCENARIO]: p.scenario,
      },
      annotations: { [ANNOTATION_SCHEDULED_AT]: String(Math.round(p.scheduledAtMs)) },
    },
    spec: {
      ...(p.node !== undefined ? { nodeName: p.node } : {}),
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'app', image: PAUSE_IMAGE }],
    },
  };
}
