// The fulfiller's Azure world for tests: the local API server and an emulated
// Azure cloud (ARM emulator over HTTP), Nodes with providerIDs whose VMs have
// NICs, and the checks every Azure fulfiller test makes on one consistent
// snapshot (both servers live in this process, so one synchronous read of
// each is one instant):
// - no address is on two NNCs, nor on two NICs;
// - every NNC IP the node may use (not in spec.ipsNotInUse) is an
//   ipConfiguration of that node's NIC with the same address, and the NC's
//   primaryIP is its `pool-monitor-nc-primary`;
// - settled: the NIC's managed ipConfigurations are exactly what the NNC
//   lists (nothing leaked, nothing missing).
// And a fulfiller on it (startAzureFulfiller), and the wait for a node's NNC
// to hold its addresses (filled).
import type { KubeConfig } from '@kubernetes/client-node';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { EmulatedCloud } from '../../harness/azure-emulator/cloud.ts';
import type { CloudLayout, EmulatedCloudOptions } from '../../harness/azure-emulator/cloud.ts';
import type { AzureBuildExtra } from '../../src/azure/setup.ts';
import { azureBackendFactory } from '../../src/azure/setup.ts';
import type { ArmObject } from '../../harness/azure-emulator/nic-put.ts';
import { NC_PRIMARY_NAME } from '../../src/azure/nic-plan.ts';
import { makeFulfillerConfig, type FulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller, type RunningFulfiller } from '../../src/fulfiller/run.ts';
import type { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import { contains, ipToInt, parseCidr } from '../../src/fulfiller/cidr.ts';
import type { ClusterSubnetState, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { dynamicContainers, GROUP, NNC_PLURAL } from '../../src/nnc/types.ts';
import { CSS, NNC, NS, startTestCluster } from './test-cluster.ts';
import { waitFor } from './wait.ts';

export { NNC, NS };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AzureCluster {
  server: ApiServer;
  kc: KubeConfig;
  cloud: EmulatedCloud;
  /** A Node (with a VM and NIC unless `providerID: false`); returns its providerID. */
  addNode(
    name: string,
    options?: { providerID?: boolean; layout?: CloudLayout },
  ): Promise<string | undefined>;
  get(name: string): Promise<NodeNetworkConfig | undefined>;
  /** The ClusterSubnetState `name` in NS, undefined when there is none (or it cannot be read). */
  css(name: string): Promise<ClusterSubnetState | undefined>;
  /** Replaces the NNC's spec (retrying on 409 until it lands). */
  setSpec(name: string, spec: Record<string, unknown>): Promise<void>;
  nncs(): NodeNetworkConfig[];
  close(): Promise<void>;
}

export async function startAzureCluster(
  cloudOptions: EmulatedCloudOptions = {},
): Promise<AzureCluster> {
  const cluster = await startTestCluster();
  const cloud = new EmulatedCloud({ log: true, ...cloudOptions });
  await cloud.start();
  const { server, kc, objects: api, getNnc: get } = cluster;
  return {
    server,
    kc,
    cloud,
    async addNode(name, options = {}) {
      const providerID =
        options.providerID === false ? undefined : cloud.addNode(name, options.layout);
      await cluster.addNode(name, providerID ? { providerID } : {});
      return providerID;
    },
    get: (name) => get(name),
    css: async (name) =>
      (await api.getNamespacedCustomObject({ ...CSS, name }).catch(() => undefined)) as
        ClusterSubnetState | undefined,
    async setSpec(name, spec) {
      // A 409 (the fulfiller wrote meanwhile) throws: waitFor reads and tries again.
      await waitFor(
        `the spec of ${name}`,
        async () => {
          const cur = await get(name);
          if (!cur) return undefined;
          await api.replaceNamespacedCustomObject({ ...NNC, name, body: { ...cur, spec } });
          return true;
        },
        20_000,
      );
    },
    nncs: () => server.objects(GROUP, NNC_PLURAL, NS) as unknown as NodeNetworkConfig[],
    async close() {
      await cloud.stop();
      await cluster.close();
    },
  };
}

/** The Azure backend's own timings (usage refresh, full-subnet hold, relist, audit). */
export type AzureBackendTuning = NonNullable<AzureBuildExtra>['backend'];

const FAST_RETRY = { backoff: { initialMs: 20, maxMs: 200, factor: 2, jitter: 0.2 } };

/**
 * A fresh fulfiller (nothing cached) on the cluster's Azure backend, with
 * short backoffs and an ARM budget that never throttles, logging at info to
 * `logs`, its /metrics on a free port.
 */
export function startAzureFulfiller(
  cluster: AzureCluster,
  logs: CaptureTransport,
  config: Partial<FulfillerConfig> = {},
  backend: AzureBackendTuning = {},
): Promise<RunningFulfiller> {
  return startFulfiller({
    kc: cluster.kc,
    config: makeFulfillerConfig({
      minIntervalMs: 0,
      backoff: { initialMs: 20, maxMs: 200 },
      ...config,
    }),
    logger: createLogger({ transports: [logs], level: 'info' }),
    defaultMetrics: false,
    listen: { host: '127.0.0.1', port: 0 },
    backend: azureBackendFactory(cluster.cloud.settings(1000, 1000), {
      tokens: cluster.cloud.tokens(),
      retry: FAST_RETRY,
      backend,
    }),
  });
}

/** The node's NNC once it holds `n` addresses and its status says Updated. */
export function filled(
  cluster: AzureCluster,
  name: string,
  n: number,
  timeoutMs = 15_000,
): Promise<NodeNetworkConfig> {
  return waitFor(
    `${name} with ${n} IPs`,
    async () => {
      const o = await cluster.get(name);
      const nc = o && dynamicContainers(o)[0];
      return nc?.ipAssignments?.length === n && o?.status?.status === 'Updated' ? o : undefined;
    },
    timeoutMs,
  );
}

interface NicConfig {
  name: string;
  ip: string;
  primary: boolean;
  subnet: string;
}

function configsOf(nic: ArmObject | undefined): NicConfig[] {
  const configs = (nic?.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];
  return configs.map((c) => ({
    name: String(c.name),
    ip: String(c.properties?.privateIPAddress ?? ''),
    primary: c.properties?.primary === true,
    subnet: String((c.properties?.subnet as { id?: string } | undefined)?.id ?? '').toLowerCase(),
  }));
}

/** The NIC's ipConfigurations of ours: UUID-named secondaries and the NC primary, in its subnet. */
export function managedConfigs(cloud: EmulatedCloud, node: string): NicConfig[] {
  const configs = configsOf(cloud.nicOf(node));
  const pods = configs.find((c) => c.primary)?.subnet ?? cloud.podSubnetId.toLowerCase();
  return configs.filter(
    (c) => !c.primary && c.subnet === pods && (UUID.test(c.name) || c.name === NC_PRIMARY_NAME),
  );
}

/** Safety: what must hold at every instant. Returns the violations found. */
export function safetyViolations(cluster: AzureCluster): string[] {
  const out: string[] = [];
  const owner = new Map<string, string>();
  for (const nnc of cluster.nncs()) {
    const node = nnc.metadata.name;
    const nc = dynamicContainers(nnc)[0];
    if (!nc) continue;
    const onNic = new Map(configsOf(cluster.cloud.nicOf(node)).map((c) => [c.name, c.ip]));
    const notInUse = new Set((nnc.spec?.ipsNotInUse as string[] | undefined) ?? []);
    const ips = [nc.primaryIP ?? '', ...(nc.ipAssignments ?? []).map((a) => a.ip)];
    const space = parseCidr(nc.subnetAddressSpace ?? '0.0.0.0/32');
    for (const ip of ips) {
      if (!contains(space, ipToInt(ip))) {
        out.push(`${node}: ${ip} is outside its NC's subnet ${nc.subnetName} ${space.text}`);
      }
      const other = owner.get(ip);
      if (other) out.push(`${ip} is on the NNCs of ${other} and ${node}`);
      owner.set(ip, node);
    }
    if (onNic.get(NC_PRIMARY_NAME) !== nc.primaryIP) {
      out.push(`${node}: NC primary ${nc.primaryIP} is not its NIC's ${NC_PRIMARY_NAME}`);
    }
    for (const a of nc.ipAssignments ?? []) {
      if (notInUse.has(a.name)) continue;
      if (onNic.get(a.name) !== a.ip) {
        out.push(`${node}: NNC IP ${a.name}=${a.ip} is not an ipConfiguration of its NIC`);
      }
    }
  }
  for (const nnc of cluster.nncs()) {
    for (const c of managedConfigs(cluster.cloud, nnc.metadata.name)) {
      const holders = cluster.cloud.emulator.network.holdersOf(c.ip);
      if (holders.length > 1) out.push(`${c.ip} is on the NICs ${holders.join(', ')}`);
    }
  }
  return out;
}

/** Settled: each NIC holds exactly what its NNC lists (nothing leaked, nothing missing). */
export function leaks(cluster: AzureCluster): string[] {
  const out: string[] = [];
  for (const nnc of cluster.nncs()) {
    const node = nnc.metadata.name;
    const nc = dynamicContainers(nnc)[0];
    const listed = new Set((nc?.ipAssignments ?? []).map((a) => a.name));
    if (nc?.primaryIP) listed.add(NC_PRIMARY_NAME);
    const held = new Set(managedConfigs(cluster.cloud, node).map((c) => c.name));
    for (const name of held) if (!listed.has(name)) out.push(`${node}: ${name} leaked on its NIC`);
    for (const name of listed) if (!held.has(name)) out.push(`${node}: ${name} not on its NIC`);
  }
  return out;
}
