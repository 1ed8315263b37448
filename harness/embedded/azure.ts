// `embedded --backend azure`: the embedded cluster's Azure. The project's ARM
// emulator on a loopback port, as strict as ARM (its README), with the pod
// subnet of the scenario; a VM for every node (created in node order) in
// the layout asked for (EmulatedCloud): `mixed` (--pod-subnet-id given: pod
// NIC, node subnet and Uniform scale-set nodes in turn, and one cordoned node
// no layout fits: unfit-node.ts) or `node-subnets`
// (no --pod-subnet-id: each NIC's own subnet, two subnets and a scale set);
// NIC operations that run a second
// and are polled at their Retry-After; ARM's read and write buckets. The
// fulfiller's Azure backend talks to it through the real SDK with the
// product's ARM budgets, and the report adds ARM requests by operation and
// status, reads and writes against their budgets, 429s, and NIC PUTs per node.
//
// Two switches, the flags --azure-timing realistic and --azure-other-writers:
//   realistic timing   ARM's operation times (NIC PUTs 10–60 s, scale-set VM
//                      updates 30–120 s)
//   other writers      cloud-provider-azure's stale whole-NIC PUTs (a NIC read
//                      every 20 s, written back 5 s later; 90 s with the
//                      realistic timing) and a scale-set reimage every 2
//                      minutes; the report counts what they removed and what
//                      became of it
import type { BackendFactory } from '../../src/fulfiller/backend.ts';
import { ROLE_ROWS } from '../../src/azure/arm/actions.ts';
import { azureBackendFactory } from '../../src/azure/setup.ts';
import { EmulatedCloud } from '../azure-emulator/cloud.ts';
import type { OperationTiming } from '../azure-emulator/network.ts';
import type { OtherWritersOptions } from '../azure-emulator/other-writers.ts';
import {
  DEFAULT_AZURE_BURST,
  DEFAULT_AZURE_QPS,
  DEFAULT_AZURE_READ_BURST,
  DEFAULT_AZURE_READ_QPS,
} from '../../src/azure/settings.ts';
import type { AzureReport, EmbeddedAzureLayout, OtherWritersOutcome } from './azure-report.ts';
import { EMBEDDED_NODE_SUBNET, UNFIT_NODE } from './azure-report.ts';

export interface EmbeddedAzureOptions {
  timing?: OperationTiming;
  otherWriters?: OtherWritersOptions;
}

/** The two switches (see the header). */
export function embeddedAzureOptions(on: {
  realistic: boolean;
  otherWriters: boolean;
}): EmbeddedAzureOptions {
  return {
    ...(on.realistic ? { timing: 'realistic' as const } : {}),
    ...(on.otherWriters
      ? {
          otherWriters: {
            // With ARM's timings a NIC operation runs 10-60 s, so a read 5 s
            // old is refused (409) or current when written back; cloud-provider-
            // azure's own reads come from caches (VMSS VMs: 600 s,
            // vmssVirtualMachinesCacheTTLInSeconds), so there it writes back
            // a read taken 90 s before.
            cloudProvider: { everyMs: 20_000, lagMs: on.realistic ? 90_000 : 5_000 },
            reimage: { everyMs: 120_000 },
          },
        }
      : {}),
  };
}

export interface EmbeddedAzure {
  /** The backend the fulfiller runs on. */
  backend: BackendFactory;
  /** The providerID of a node's VM (every node has one). */
  providerID(node: string): string | undefined;
  /** Layout mixed: the VM of the node no layout fits (unfit-node.ts), and ARM writes for it. */
  unfit?: { providerID: string; armWrites(): number };
  report(): AzureReport;
  stop(): Promise<void>;
}

/** How long an emulated NIC operation runs (ARM's take seconds; polls wait for it). */
export const EMBEDDED_OPERATION_MS = 1000;

export async function startEmbeddedAzure(
  podSubnet: string,
  nodeNames: readonly string[],
  budget: { qps?: number; burst?: number; readQps?: number; readBurst?: number } = {},
  layout: EmbeddedAzureLayout = 'mixed',
  options: EmbeddedAzureOptions = {},
): Promise<EmbeddedAzure> {
  const qps = budget.qps ?? DEFAULT_AZURE_QPS;
  const burst = budget.burst ?? DEFAULT_AZURE_BURST;
  const readQps = budget.readQps ?? DEFAULT_AZURE_READ_QPS;
  const readBurst = budget.readBurst ?? DEFAULT_AZURE_READ_BURST;
  const cloud = new EmulatedCloud({
    podPrefix: podSubnet,
    nodePrefix: EMBEDDED_NODE_SUBNET,
    operationMs: EMBEDDED_OPERATION_MS,
    layout,
    ...(options.timing ? { timing: options.timing } : {}),
    ...(options.otherWriters ? { otherWriters: options.otherWriters } : {}),
  });
  // The fulfiller's identity has exactly the README's roles: every call and
  // every linked resource a write references is authorized as ARM would.
  cloud.grantRoles(ROLE_ROWS);
  await cloud.start();
  const ids = new Map(nodeNames.map((name) => [name, cloud.addNode(name)]));
  const unfit =
    layout === 'mixed'
      ? {
          providerID: cloud.addNode(UNFIT_NODE, 'unfit'),
          armWrites: () => cloud.writesFor(UNFIT_NODE),
        }
      : undefined;
  return {
    backend: azureBackendFactory(cloud.settings(qps, burst, readQps, readBurst), {
      tokens: cloud.tokens(),
    }),
    providerID: (node) => ids.get(node),
    ...(unfit ? { unfit } : {}),
    report() {
      const r = cloud.report();
      const requests = Object.values(r.byOperationAndStatus).reduce((a, b) => a + b, 0);
      const writes = cloud.emulator.requests.filter((q) => q.method !== 'GET').length;
      return {
        qps,
        burst,
        readQps,
        readBurst,
        requests,
        reads: requests - writes,
        writes,
        throttled: cloud.emulator.quota?.throttled ?? 0,
        ...(options.otherWriters ? { otherWriters: otherWritersOutcome(cloud) } : {}),
        ...r,
      };
    },
    stop: () => cloud.stop(),
  };
}

/**
 * What the other writers removed, and what became of it: put back on the
 * same NIC with the same name and address by a later write (restored), or not.
 */
function otherWritersOutcome(cloud: EmulatedCloud): OtherWritersOutcome {
  const writers = cloud.emulator.otherWriters;
  let restored = 0;
  const byWriter: Record<string, number> = {};
  for (const r of writers.removed) {
    byWriter[r.by] = (byWriter[r.by] ?? 0) + 1;
    if (r.restoredAt !== undefined) restored++;
  }
  return {
    removed: writers.removed.length,
    restored,
    lost: writers.removed.length - restored,
    byWriter,
    skipped: writers.skipped,
  };
}
