// Shared set-up for the Azure tests: an emulator on a loopback port with one
// VNet (a node subnet and a pod subnet), its VMs and scale-set instances,
// and the real SDK clients (network and compute) pointed at it.
import type { ComputeManagementClient } from '@azure/arm-compute';
import type { NetworkManagementClient } from '@azure/arm-network';
import { createArmClient, createComputeClient } from '../../src/azure/arm/client.ts';
import type { BearerTokenSource } from '../../src/azure/arm/credentials.ts';
import type { RetryOptions } from '../../src/azure/arm/policies.ts';
import { ArmBudget } from '../../src/azure/arm/budget.ts';
import { TokenBucket } from '../../src/azure/arm/token-bucket.ts';
import type { BucketConfig } from '../../src/azure/arm/token-bucket.ts';
import type { ArmEmulatorOptions } from '../../harness/azure-emulator/server.ts';
import type { AddedVm, UpgradeMode } from '../../harness/azure-emulator/network.ts';
import { ArmEmulator } from '../../harness/azure-emulator/server.ts';
import type { ArmMetricsSink } from '../../src/azure/metrics.ts';

export const SUB = '00000000-0000-0000-0000-000000000001';
export const RG = 'rg-nodes';
export const TOKEN = 'emulator-token';
/** The IPv6 /64 of a dual-stack pod subnet (startRig's `podPrefix6`) in the tests. */
export const POD6 = 'fd00:10:240::/64';

export interface Rig {
  em: ArmEmulator;
  nodeSubnetId: string;
  podSubnetId: string;
  close(): Promise<void>;
}

/** `podPrefix6`, `nodePrefix6`: the subnet is dual-stack, with that IPv6 /64. */
export async function startRig(
  options: Partial<ArmEmulatorOptions> & {
    podPrefix?: string;
    podPrefix6?: string;
    nodePrefix6?: string;
  } = {},
): Promise<Rig> {
  const { podPrefix, podPrefix6, nodePrefix6, ...emulator } = options;
  const em = new ArmEmulator({ subscriptionId: SUB, tokens: [TOKEN], ...emulator });
  const both = (v4: string, v6: string | undefined) => (v6 ? [v4, v6] : v4);
  const ids = em.network.addVirtualNetwork(RG, 'vnet', {
    nodes: both('10.224.0.0/16', nodePrefix6),
    pods: both(podPrefix ?? '10.240.0.0/16', podPrefix6),
  });
  await em.listen();
  return {
    em,
    nodeSubnetId: ids.nodes!,
    podSubnetId: ids.pods!,
    close: () => em.close(),
  };
}

export const staticToken = (token = TOKEN): BearerTokenSource => ({
  token: async () => token,
  invalidate: () => {},
  description: 'test token',
});

export function clientFor(
  rig: Rig,
  options: {
    bucket?: BucketConfig | TokenBucket | ArmBudget;
    tokens?: BearerTokenSource;
    metrics?: ArmMetricsSink;
    retry?: Partial<RetryOptions>;
  } = {},
): NetworkManagementClient {
  const bucket =
    options.bucket instanceof TokenBucket || options.bucket instanceof ArmBudget
      ? options.bucket
      : new TokenBucket(options.bucket ?? { qps: 1000, burst: 1000 });
  return createArmClient({
    endpoint: rig.em.endpoint,
    subscriptionId: SUB,
    tokens: options.tokens ?? staticToken(),
    bucket,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    retry: { backoff: { initialMs: 20, maxMs: 200, factor: 2, jitter: 0.2 }, ...options.retry },
  });
}

/** The compute client (scale-set VMs) on the rig, as the product builds it. */
export function computeClientFor(rig: Rig, tokens = staticToken()): ComputeManagementClient {
  return createComputeClient({
    endpoint: rig.em.endpoint,
    subscriptionId: SUB,
    tokens,
    bucket: new TokenBucket({ qps: 1000, burst: 1000 }),
  });
}

export type Layout = 'pod-nic' | 'node-subnet';

/**
 * Adds `count` VMs named node-0...: by default in the pod NIC layout (the
 * primary NIC in the node subnet, a second NIC in the pod subnet); with
 * `node-subnet`, one NIC in the pod subnet. `nicName` is the NIC that takes pod IPs.
 */
export function addNodes(rig: Rig, count: number, prefix = 'node', layout: Layout = 'pod-nic') {
  return Array.from({ length: count }, (_, i) =>
    rig.em.network.addVm({
      resourceGroup: RG,
      name: `${prefix}-${i}`,
      ...(layout === 'pod-nic'
        ? { subnetId: rig.nodeSubnetId, podNicSubnetId: rig.podSubnetId }
        : { subnetId: rig.podSubnetId }),
    }),
  );
}

/**
 * Adds instance `instanceId` (default '0') of the Uniform scale set
 * `scaleSet` (default 'pool'), its NIC in the pod subnet.
 */
export function addInstance(
  rig: Rig,
  options: {
    scaleSet?: string;
    instanceId?: string;
    upgradePolicy?: UpgradeMode;
    asgIds?: string[];
  } = {},
): AddedVm {
  const { scaleSet = 'pool', instanceId = '0', ...rest } = options;
  return rig.em.network.addScaleSetVm({
    resourceGroup: RG,
    scaleSet,
    instanceId,
    subnetId: rig.podSubnetId,
    ...rest,
  });
}
