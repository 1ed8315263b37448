// The embedded cluster's Node objects, as a kubelet would register them: one
// Ready Node per name with its InternalIP, kubelet version and room for 250
// pods (Azure CNI's maximum), created through the API server like any client.
import type { KubeConfig } from '@kubernetes/client-node';
import { KUBE_VERSION } from '../apiserver/discovery.ts';
import { inBatches } from './batches.ts';
import { httpJsonCalls } from './http-pod-api.ts';

/** The InternalIP of node `i`: 10.224.x.y, outside any pod subnet the scenarios use. */
export function nodeAddress(i: number): string {
  const n = i + 4;
  return `10.224.${(n >> 8) & 255}.${n & 255}`;
}

/** Pods each embedded node takes (status.allocatable.pods): Azure CNI's maximum. */
export const NODE_PODS = 250;

/** The status an embedded node reports: Ready, its address, version and room, as a kubelet would. */
export function embeddedNodeStatus(
  name: string,
  address: string,
  now: Date,
): Record<string, unknown> {
  const room = { pods: String(NODE_PODS), cpu: '4', memory: '16Gi' };
  return {
    addresses: [
      { type: 'InternalIP', address },
      { type: 'Hostname', address: name },
    ],
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'simulated kubelet is posting ready status',
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
    ],
    capacity: room,
    allocatable: room,
    nodeInfo: {
      kubeletVersion: KUBE_VERSION.gitVersion,
      kubeProxyVersion: KUBE_VERSION.gitVersion,
      containerRuntimeVersion: 'sim://1.0',
      operatingSystem: 'linux',
      architecture: 'amd64',
      osImage: 'pool-monitor embedded node',
      kernelVersion: '',
      machineID: '',
      systemUUID: '',
      bootID: '',
    },
  };
}

/**
 * Creates each Node (labels, providerID when the backend gives one) and posts
 * its Ready status: over plain HTTP (http-pod-api.ts), a thousand nodes'
 * two calls each without client-node's serializer and fetch.
 */
export async function createNodeObjects(
  kc: KubeConfig,
  nodeNames: readonly string[],
  opts: { limit: number; providerID?: (node: string) => string | undefined },
): Promise<void> {
  const api = httpJsonCalls(kc, opts.limit);
  try {
    await inBatches(nodeNames, opts.limit, async (name, i) => {
      const providerID = opts.providerID?.(name);
      await api.call('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' },
        },
        ...(providerID ? { spec: { providerID } } : {}),
      });
      await api.call(
        'PATCH',
        `/api/v1/nodes/${encodeURIComponent(name)}/status`,
        { status: embeddedNodeStatus(name, nodeAddress(i), new Date()) },
        'application/merge-patch+json',
      );
    });
  } finally {
    api.close();
  }
}
