// `embedded --backend azure`: the embedded cluster's Azure. The project's ARM
// emulator on a loopback port with the pod subnet of the scenario, a VM with
// a NIC for every node (created in node order, so node-N's NIC address is its
// InternalIP), the fulfiller's Azure backend talking to it through the real
// SDK with the product's ARM budget, and what the report adds: ARM requests
// by operation and status, and NIC PUTs per node.
import type { BackendFactory } from '../fulfiller/backend.ts';
import { EmulatedCloud } from '../azure/emulator/cloud.ts';
import { DEFAULT_AZURE_BURST, DEFAULT_AZURE_QPS } from '../azure/settings.ts';
import type { AzureReport } from './azure-report.ts';

export interface EmbeddedAzure {
  /** The backend the fulfiller runs on. */
  backend: BackendFactory;
  /** The providerID of a node's VM (every node has one). */
  providerID(node: string): string | undefined;
  report(): AzureReport;
  stop(): Promise<void>;
}

export async function startEmbeddedAzure(
  podSubnet: string,
  nodeNames: readonly string[],
  budget: { qps?: number; burst?: number } = {},
): Promise<EmbeddedAzure> {
  const qps = budget.qps ?? DEFAULT_AZURE_QPS;
  const burst = budget.burst ?? DEFAULT_AZURE_BURST;
  const cloud = new EmulatedCloud({ podPrefix: podSubnet });
  await cloud.start();
  const ids = new Map(nodeNames.map((name) => [name, cloud.addNode(name)]));
  return {
    backend: cloud.backendFactory({ qps, burst }),
    providerID: (node) => ids.get(node),
    report() {
      const r = cloud.report();
      const requests = Object.values(r.byOperationAndStatus).reduce((a, b) => a + b, 0);
      return { qps, burst, requests, ...r };
    },
    stop: () => cloud.stop(),
  };
}
