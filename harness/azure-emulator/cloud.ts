// A small Azure "cloud" for demos and benches: the emulator with one VNet
// (node subnet and pod subnet), a VM per node, and the settings the Azure
// backend needs to talk to it. The embedded cluster gives each Node the
// providerID returned here. A node's VM comes in one of the two layouts the
// backend serves (nic-choice.ts), or in neither ('unfit', for tests):
//   pod-nic      primary NIC in the node subnet, a second NIC in the pod subnet
//   node-subnet  one NIC, in the pod subnet
//   scale-set    an instance of the Uniform scale set `aks-pool`, its NIC in
//                the pod subnet (written through the scale-set VM)
//   mixed        (default) node 0 pod-nic, 1 node-subnet, 2 scale-set, 3 pod-nic...
//   node-subnets no --pod-subnet-id: each VM's own NIC takes its pod IPs in
//                its own subnet; node 0 in aks-nodes, 1 in aks-pods, 2 a
//                scale-set instance in aks-nodes, 3 in aks-nodes... (two
//                subnets in use, so two ClusterSubnetStates)
// Every NIC's primary ipConfiguration is in an application security group,
// so every new ipConfiguration must carry it too. The cloud knows nothing of
// the product: settings() and tokens() are plain values a test hands to the
// Azure backend's factory, and grantRoles() takes the rows it is given.
import type { Ipv6PerNic, OperationTiming, SubnetFullMode, UpgradeMode } from './network.ts';
import type { RoleAssignment } from './authorization.ts';
import type { QuotaSpec } from './quota.ts';
import type { OtherWritersOptions } from './other-writers.ts';
import { ArmEmulator } from './server.ts';

export type CloudLayout = 'pod-nic' | 'node-subnet' | 'scale-set' | 'unfit';

export interface EmulatedCloudOptions {
  nodePrefix?: string;
  podPrefix?: string;
  /** The pod subnet's IPv6 /64: a dual-stack pod subnet. */
  podPrefix6?: string;
  /** The node subnet's IPv6 /64 (its NICs take pod IPs in the node-subnets layout). */
  nodePrefix6?: string;
  /** How many IPv6 ipConfigurations a NIC may hold (default `one`, as Azure documents). */
  ipv6PerNic?: Ipv6PerNic;
  /** The pod subnet's ARM name (default aks-pods). */
  podSubnetName?: string;
  subnetFullMode?: SubnetFullMode;
  /** How long a NIC PUT's operation runs (its polls say InProgress, Retry-After its length). */
  operationMs?: number;
  /** `realistic`: ARM's operation times (network.ts), Retry-After 10 s; default fast. */
  timing?: OperationTiming;
  /** The layout of every node's VM; default 'mixed'. */
  layout?: CloudLayout | 'mixed' | 'node-subnets';
  /** The identity's role assignments (absent: allowed everything). */
  roleAssignments?: RoleAssignment[];
  /** ARM's read/write buckets (default ARM's); false: none. */
  quota?: QuotaSpec | false;
  /** Keep the per-request log (for reports; default true). */
  log?: boolean;
  /** cloud-provider-azure's stale whole-NIC PUTs and scale-set reimages (other-writers.ts). */
  otherWriters?: OtherWritersOptions;
  /** The Uniform scale set's upgradePolicy.mode (default Manual). */
  scaleSetUpgradePolicy?: UpgradeMode;
}

export const CLOUD_SUBSCRIPTION = '00000000-0000-0000-0000-0000000c10d0';
export const CLOUD_RESOURCE_GROUP = 'mc_pool-monitor';
export const CLOUD_TOKEN = 'emulated-cloud-token';
/** The Uniform scale set of the cloud's scale-set nodes. */
export const SCALE_SET = 'aks-pool';

/** What the Azure backend needs to reach this cloud (its settings, as plain values). */
export interface CloudSettings {
  subscriptionId: string;
  resourceGroup: string;
  podSubnetId?: string;
  endpoint: string;
  qps?: number;
  burst?: number;
  readQps?: number;
  readBurst?: number;
}

/** A role row: an action and its scope, with the placeholders SUB, NODES_RG, POD_SUBNET_ID, VNET_ID. */
export interface RoleRowLike {
  action: string;
  scope: string;
}

export class EmulatedCloud {
  readonly emulator: ArmEmulator;
  readonly nodeSubnetId: string;
  readonly podSubnetId: string;
  readonly asgId: string;
  private readonly layout: CloudLayout | 'mixed' | 'node-subnets';
  private readonly upgradePolicy: UpgradeMode;
  private readonly providerIDs = new Map<string, string>();
  /** Per node: its NIC's name, and its scale-set instance id when it is one. */
  private readonly nicKeys = new Map<string, { nic: string; scaleSet?: string }>();
  /** Nodes added in the 'unfit' layout: left out of PUTs per node (they get none). */
  private readonly unfit = new Set<string>();
  private scaleSetInstances = 0;

  constructor(options: EmulatedCloudOptions = {}) {
    this.emulator = new ArmEmulator({
      subscriptionId: CLOUD_SUBSCRIPTION,
      tokens: [CLOUD_TOKEN],
      ...(options.subnetFullMode ? { subnetFullMode: options.subnetFullMode } : {}),
      ...(options.operationMs !== undefined ? { operationMs: options.operationMs } : {}),
      ...(options.timing ? { timing: options.timing } : {}),
      ...(options.log !== undefined ? { log: options.log } : {}),
      ...(options.roleAssignments ? { roleAssignments: options.roleAssignments } : {}),
      ...(options.quota !== undefined ? { quota: options.quota } : {}),
      ...(options.otherWriters ? { otherWriters: options.otherWriters } : {}),
      ...(options.ipv6PerNic ? { ipv6PerNic: options.ipv6PerNic } : {}),
    });
    this.layout = options.layout ?? 'mixed';
    this.upgradePolicy = options.scaleSetUpgradePolicy ?? 'Manual';
    this.asgId = `/subscriptions/${CLOUD_SUBSCRIPTION}/resourceGroups/${CLOUD_RESOURCE_GROUP}/providers/Microsoft.Network/applicationSecurityGroups/aks-nodes`;
    const prefixes = (v4: string, v6: string | undefined) => (v6 ? [v4, v6] : v4);
    const ids = this.emulator.network.addVirtualNetwork(CLOUD_RESOURCE_GROUP, 'aks-vnet', {
      'aks-nodes': prefixes(options.nodePrefix ?? '10.224.0.0/16', options.nodePrefix6),
      [options.podSubnetName ?? 'aks-pods']: prefixes(
        options.podPrefix ?? '10.240.0.0/16',
        options.podPrefix6,
      ),
    });
    this.nodeSubnetId = ids['aks-nodes']!;
    this.podSubnetId = ids[options.podSubnetName ?? 'aks-pods']!;
  }

  async start(): Promise<void> {
    await this.emulator.listen();
  }

  stop(): Promise<void> {
    return this.emulator.close();
  }

  /** Adds a VM (and its NICs) for a node; returns the Node's providerID. Idempotent. */
  addNode(name: string, layout?: CloudLayout): string {
    const known = this.providerIDs.get(name);
    if (known) return known;
    const index = this.providerIDs.size;
    const chosen = layout ?? this.layoutOf(index);
    if (chosen === 'unfit') this.unfit.add(name);
    // Without a pod subnet, the node subnet layout's NICs are in either subnet.
    const ownSubnet =
      this.layout === 'node-subnets' && index % 3 !== 1 ? this.nodeSubnetId : this.podSubnetId;
    if (chosen === 'scale-set') {
      const instance = this.emulator.network.addScaleSetVm({
        resourceGroup: CLOUD_RESOURCE_GROUP,
        scaleSet: SCALE_SET,
        instanceId: String(this.scaleSetInstances++),
        subnetId: ownSubnet,
        asgIds: [this.asgId],
        upgradePolicy: this.upgradePolicy,
        ...this.nodeNicRefs({ scaleSet: true }),
      });
      this.providerIDs.set(name, instance.providerID);
      this.nicKeys.set(name, { scaleSet: instance.vmId.split('/').pop()!, nic: instance.nicName });
      return instance.providerID;
    }
    const vm = this.emulator.network.addVm({
      resourceGroup: CLOUD_RESOURCE_GROUP,
      name,
      subnetId: chosen === 'node-subnet' ? ownSubnet : this.nodeSubnetId,
      ...(chosen === 'pod-nic' ? { podNicSubnetId: this.podSubnetId } : {}),
      asgIds: [this.asgId],
      ...this.nodeNicRefs(chosen === 'node-subnet' ? { own: name } : {}),
    });
    this.providerIDs.set(name, vm.providerID);
    this.nicKeys.set(name, { nic: vm.nicName });
    return vm.providerID;
  }

  /**
   * What a node's primary NIC references besides its subnet and ASG, as on
   * an AKS-style node: cloud-provider-azure's load balancer pool (on the
   * primary ipConfiguration) and the nodes' NSG; a node subnet VM (`own`)
   * also a public IP of its own, an SSH inbound NAT rule and an application
   * gateway's backend pool; a scale-set instance the scale set's inbound
   * NAT pool. A write sends them back, so it needs their linked actions.
   */
  private nodeNicRefs(of: { own?: string; scaleSet?: boolean }): {
    nicProperties: Record<string, unknown>;
    primaryConfigProperties: Record<string, unknown>;
  } {
    const rg = `/subscriptions/${CLOUD_SUBSCRIPTION}/resourceGroups/${CLOUD_RESOURCE_GROUP}/providers/Microsoft.Network`;
    const lb = `${rg}/loadBalancers/kubernetes`;
    return {
      nicProperties: {
        networkSecurityGroup: { id: `${rg}/networkSecurityGroups/aks-agentpool-nsg` },
      },
      primaryConfigProperties: {
        loadBalancerBackendAddressPools: [{ id: `${lb}/backendAddressPools/kubernetes` }],
        ...(of.own
          ? {
              publicIPAddress: { id: `${rg}/publicIPAddresses/${of.own}-pip` },
              loadBalancerInboundNatRules: [{ id: `${lb}/inboundNatRules/ssh-${of.own}` }],
              applicationGatewayBackendAddressPools: [
                { id: `${rg}/applicationGateways/ingress/backendAddressPools/web` },
              ],
            }
          : {}),
        ...(of.scaleSet
          ? { loadBalancerInboundNatPools: [{ id: `${lb}/inboundNatPools/ssh` }] }
          : {}),
      },
    };
  }

  /**
   * Grants exactly `rows` (the README's role table) on this cloud's ids, on
   * each subnet the nodes take pod IPs in: the emulator's authorization,
   * linked checks included, on.
   */
  grantRoles(rows: readonly RoleRowLike[]): void {
    const subnets =
      this.layout === 'node-subnets' ? [this.nodeSubnetId, this.podSubnetId] : [this.podSubnetId];
    this.emulator.roleAssignments = subnets.flatMap((subnet) =>
      rows.map((r) => ({
        actions: [r.action],
        scope: r.scope
          .replace('POD_SUBNET_ID', subnet)
          .replace('VNET_ID', subnet.replace(/\/subnets\/[^/]+$/, ''))
          .replace('SUB', CLOUD_SUBSCRIPTION)
          .replace('NODES_RG', CLOUD_RESOURCE_GROUP),
      })),
    );
  }

  /** Attaches a NIC in the pod subnet to a node's VM (an unfit node made fit, out of band). */
  attachPodNic(node: string): void {
    const nic = `${node}-pod-nic`;
    this.emulator.network.attachNic({
      resourceGroup: CLOUD_RESOURCE_GROUP,
      name: node,
      nicName: nic,
      subnetId: this.podSubnetId,
      asgIds: [this.asgId],
    });
    this.nicKeys.set(node, { nic });
  }

  private layoutOf(index: number): CloudLayout {
    if (this.layout === 'mixed')
      return (['pod-nic', 'node-subnet', 'scale-set'] as const)[index % 3]!;
    if (this.layout === 'node-subnets') return index % 3 === 2 ? 'scale-set' : 'node-subnet';
    return this.layout;
  }

  /** The backend's settings for this cloud (token passed separately, see CLOUD_TOKEN). */
  settings(qps?: number, burst?: number, readQps?: number, readBurst?: number): CloudSettings {
    return {
      subscriptionId: CLOUD_SUBSCRIPTION,
      resourceGroup: CLOUD_RESOURCE_GROUP,
      // The node subnet layout without --pod-subnet-id: each NIC's own subnet.
      ...(this.layout === 'node-subnets' ? {} : { podSubnetId: this.podSubnetId }),
      endpoint: this.emulator.endpoint,
      ...(qps !== undefined ? { qps } : {}),
      ...(burst !== undefined ? { burst } : {}),
      // Reads default to the writes' budget when only that is given (tests that set one budget).
      ...((readQps ?? qps) !== undefined ? { readQps: readQps ?? qps } : {}),
      ...((readBurst ?? burst) !== undefined ? { readBurst: readBurst ?? burst } : {}),
    };
  }

  /** The bearer token this cloud accepts, as a token source. */
  tokens(): { token(): Promise<string>; invalidate(): void; description: string } {
    return {
      token: () => Promise.resolve(CLOUD_TOKEN),
      invalidate: () => {},
      description: 'the emulated cloud token',
    };
  }

  /** The NIC that takes a node's pod IPs (or its only NIC), as the emulator holds it now. */
  nicOf(node: string) {
    const k = this.nicKeys.get(node);
    if (k?.scaleSet !== undefined) {
      return this.emulator.network.getScaleSetNic(
        CLOUD_RESOURCE_GROUP,
        SCALE_SET,
        k.scaleSet,
        k.nic,
      );
    }
    return this.emulator.network.getNic(CLOUD_RESOURCE_GROUP, k?.nic ?? `${node}-nic`);
  }

  /** The emulator's key of a node's pod NIC (for OtherWriters' deterministic steps). */
  nicKey(node: string): string {
    const k = this.nicKeys.get(node);
    const rg = CLOUD_RESOURCE_GROUP.toLowerCase();
    if (k?.scaleSet !== undefined) {
      return `vmss:${rg}/${SCALE_SET.toLowerCase()}/${k.scaleSet}/${k.nic.toLowerCase()}`;
    }
    return `${rg}/${(k?.nic ?? `${node}-nic`).toLowerCase()}`;
  }

  /** What the emulator's request log calls a node's NIC writes (its NIC, or its scale-set VM). */
  private writeKey(node: string): string {
    const k = this.nicKeys.get(node);
    if (k?.scaleSet !== undefined) return `vmss:${SCALE_SET}/${k.scaleSet}`;
    return k?.nic ?? `${node}-nic`;
  }

  /** Writes (any method but GET) the emulator answered for a node's NIC or scale-set VM. */
  writesFor(node: string): number {
    const key = this.writeKey(node);
    return this.emulator.requests.filter((r) => r.method !== 'GET' && r.nic === key).length;
  }

  /** ARM requests by operation and status, and PUTs per node (unfit nodes aside), for reports. */
  report(): {
    byOperationAndStatus: Record<string, number>;
    putsPerNode: { min: number; max: number; mean: number };
  } {
    const byOperationAndStatus: Record<string, number> = {};
    const puts = new Map<string, number>();
    for (const r of this.emulator.requests) {
      const k = `${r.operation} ${r.status}`;
      byOperationAndStatus[k] = (byOperationAndStatus[k] ?? 0) + 1;
      const write =
        r.operation === 'NetworkInterfaces.CreateOrUpdate' || r.operation === 'ScaleSetVMs.Update';
      if (write && r.nic) puts.set(r.nic, (puts.get(r.nic) ?? 0) + 1);
    }
    const counts = [...this.providerIDs.keys()]
      .filter((n) => !this.unfit.has(n))
      .map((n) => puts.get(this.writeKey(n)) ?? 0);
    const sum = counts.reduce((a, b) => a + b, 0);
    return {
      byOperationAndStatus,
      putsPerNode: {
        min: counts.length ? Math.min(...counts) : 0,
        max: counts.length ? Math.max(...counts) : 0,
        mean: counts.length ? Number((sum / counts.length).toFixed(2)) : 0,
      },
    };
  }
}
