// The emulator's state: virtual networks with subnets, VMs with their NICs,
// and the long-running operations NIC PUTs start. No HTTP here (server.ts
// serves it). Operations complete lazily: whoever looks after `doneAt` sees
// them finished, so an injected clock makes them deterministic.
import { createHash, randomUUID } from 'node:crypto';
import { parseSubnetId, sameArmId, vmId } from '../../src/azure/arm/ids.ts';
import { OTHER_TENANT_SUBSCRIPTION } from './authorization.ts';
import { ArmHttpError } from './errors.ts';
import type { ArmObject } from './nic-put.ts';
import { applyNicPut } from './nic-put.ts';
import { EmulatedSubnet } from './subnets.ts';

export type SubnetFullMode = 'sync' | 'lro';

export interface NetworkOptions {
  subscriptionId: string;
  location?: string;
  /** How long a NIC PUT's operation stays InProgress, in ms (default 0). */
  operationMs?: number;
  /** `sync`: a PUT that does not fit answers 400 SubnetIsFull; `lro`: its operation ends Failed with that code. */
  subnetFullMode?: SubnetFullMode;
  now?: () => number;
  /** Private IP addresses per VM (Azure: 256). */
  perVmCap?: number;
  /** Private IP addresses per virtual network (Azure: 65,536). */
  perVnetCap?: number;
  /**
   * `fast` (default): every operation runs `operationMs`. `realistic`: as
   * ARM's run (azure-cli#25253): a NIC PUT 10–60 s, a scale-set VM update
   * 30–120 s, uniformly drawn.
   */
  timing?: OperationTiming;
  /** Draws realistic durations (default Math.random). */
  random?: () => number;
}

export type OperationTiming = 'fast' | 'realistic';

/** Realistic operation durations, ms: [shortest, longest]. */
export const REALISTIC_OPERATION_MS = { nic: [10_000, 60_000], vm: [30_000, 120_000] } as const;

export interface VmOptions {
  resourceGroup: string;
  name: string;
  /** Subnet id of the NIC's primary ipConfiguration (the node subnet). */
  subnetId: string;
  nicName?: string;
  /** Extra NIC properties (networkSecurityGroup, dnsSettings, enableAcceleratedNetworking...). */
  nicProperties?: Record<string, unknown>;
  /** Extra properties of the primary ipConfiguration (loadBalancerBackendAddressPools...). */
  primaryConfigProperties?: Record<string, unknown>;
  tags?: Record<string, string>;
  /** Pod NIC layout: a second NIC whose primary ipConfiguration is in this subnet. */
  podNicSubnetId?: string;
  /** Application security groups of the NICs' primary ipConfigurations. */
  asgIds?: string[];
}

export interface AddedVm {
  vmId: string;
  providerID: string;
  /** The NIC that takes pod IPs: the pod NIC when there is one, else the primary NIC. */
  nicName: string;
  nicId: string;
  /** The VM's primary NIC. */
  primaryNicName: string;
}

interface Operation {
  id: string;
  nicKey: string;
  /** The resource group of the resource the operation writes (where its polls are authorized). */
  resourceGroupId: string;
  doneAt: number;
  failure?: ArmHttpError;
  settled: boolean;
}

export interface OperationStatus {
  status: 'InProgress' | 'Succeeded' | 'Failed';
  error?: { code: string; message: string };
}

const newEtag = (): string => `W/"${randomUUID()}"`;
const key = (resourceGroup: string, name: string): string =>
  `${resourceGroup.toLowerCase()}/${name.toLowerCase()}`;
const MAX_OPERATIONS = 20_000;

/** `/subscriptions/S/resourceGroups/G` of an ARM resource id. */
const resourceGroupIdOf = (id: string): string =>
  /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+/i.exec(id)?.[0] ?? id;

export class EmulatedNetwork {
  readonly subscriptionId: string;
  readonly location: string;
  operationMs: number;
  timing: OperationTiming;
  private readonly random: () => number;
  subnetFullMode: SubnetFullMode;
  perVmCap: number;
  perVnetCap: number;
  private readonly now: () => number;
  private readonly subnets = new Map<string, EmulatedSubnet>();
  private readonly nics = new Map<string, ArmObject>();
  private readonly busy = new Map<string, string>();
  private readonly operations = new Map<string, Operation>();
  /** Addresses handed out and given back through PUTs, for tests and reports. */
  readonly counts = { taken: 0, freed: 0 };
  /** The longest operation started (ms), for the bench's bound. */
  longestOperationMs = 0;
  /** Called after every accepted NIC write (other-writers.ts follows what comes back). */
  readonly written: Array<(key: string, nic: ArmObject) => void> = [];

  constructor(options: NetworkOptions) {
    this.subscriptionId = options.subscriptionId;
    this.location = options.location ?? 'westeurope';
    this.operationMs = options.operationMs ?? 0;
    this.timing = options.timing ?? 'fast';
    this.random = options.random ?? Math.random;
    this.subnetFullMode = options.subnetFullMode ?? 'sync';
    this.now = options.now ?? Date.now;
    this.perVmCap = options.perVmCap ?? 256;
    this.perVnetCap = options.perVnetCap ?? 65_536;
  }

  /** Adds a virtual network; returns the subnet ids by name. */
  addVirtualNetwork(
    resourceGroup: string,
    name: string,
    subnets: Record<string, string>,
  ): Record<string, string> {
    const ids: Record<string, string> = {};
    for (const [subnet, prefix] of Object.entries(subnets)) {
      const id = `/subscriptions/${this.subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Network/virtualNetworks/${name}/subnets/${subnet}`;
      this.subnets.set(id.toLowerCase(), new EmulatedSubnet(id, subnet, prefix));
      ids[subnet] = id;
    }
    return ids;
  }

  subnet(id: string): EmulatedSubnet | undefined {
    return this.subnets.get(id.replace(/\/$/, '').toLowerCase());
  }

  /** Every subnet of one virtual network. */
  subnetsOf(resourceGroup: string, virtualNetwork: string): EmulatedSubnet[] {
    return [...this.subnets.values()].filter((s) => {
      const ref = parseSubnetId(s.id);
      return (
        ref.resourceGroup.toLowerCase() === resourceGroup.toLowerCase() &&
        ref.virtualNetwork.toLowerCase() === virtualNetwork.toLowerCase()
      );
    });
  }

  /**
   * Adds a VM with its primary NIC (one primary Dynamic ipConfiguration in
   * `subnetId`) and, with `podNicSubnetId`, a second NIC whose primary
   * ipConfiguration is in that subnet (the pod NIC layout).
   */
  addVm(options: VmOptions): AddedVm {
    const id = vmId(this.subscriptionId, options.resourceGroup, options.name);
    const primaryNicName = options.nicName ?? `${options.name}-nic`;
    const primary = this.addNic(options, primaryNicName, options.subnetId, true, id);
    let pod = primary;
    if (options.podNicSubnetId !== undefined) {
      pod = this.addNic(
        { ...options, nicProperties: {}, primaryConfigProperties: {} },
        `${options.name}-pod-nic`,
        options.podNicSubnetId,
        false,
        id,
      );
    }
    return {
      vmId: id,
      providerID: `azure://${id}`,
      nicName: pod.name,
      nicId: pod.id,
      primaryNicName,
    };
  }

  /**
   * Attaches a second NIC, its primary ipConfiguration in `subnetId`, to a VM
   * added before (what an operator does to a stopped VM out of band).
   */
  attachNic(options: VmOptions & { nicName: string }): { name: string; id: string } {
    const id = vmId(this.subscriptionId, options.resourceGroup, options.name);
    const nic = { ...options, nicProperties: {}, primaryConfigProperties: {} };
    return this.addNic(nic, options.nicName, options.subnetId, false, id);
  }

  private addNic(
    options: VmOptions,
    nicName: string,
    subnetId: string,
    primary: boolean,
    vm: string,
  ): { name: string; id: string } {
    const nicId = `/subscriptions/${this.subscriptionId}/resourceGroups/${options.resourceGroup}/providers/Microsoft.Network/networkInterfaces/${nicName}`;
    return this.addNicAt(
      key(options.resourceGroup, nicName),
      nicId,
      options,
      nicName,
      subnetId,
      primary,
      vm,
    );
  }

  private addNicAt(
    k: string,
    nicId: string,
    options: Omit<VmOptions, 'subnetId'>,
    nicName: string,
    subnetId: string,
    primary: boolean,
    vm: string,
  ): { name: string; id: string } {
    const subnet = this.subnet(subnetId);
    if (!subnet) throw new Error(`unknown subnet ${subnetId}`);
    if (this.nics.has(k)) throw new Error(`NIC ${nicName} exists`);
    const ip = subnet.allocate();
    if (ip === undefined) throw new Error(`subnet ${subnet.name} is full`);
    const etag = newEtag();
    const asgs = (options.asgIds ?? []).map((asg) => ({ id: asg }));
    const nic: ArmObject = {
      name: nicName,
      id: nicId,
      etag,
      type: 'Microsoft.Network/networkInterfaces',
      location: this.location,
      ...(options.tags ? { tags: options.tags } : {}),
      properties: {
        provisioningState: 'Succeeded',
        resourceGuid: randomUUID(),
        macAddress: randomUUID().replace(/-/g, '').slice(0, 12).toUpperCase(),
        primary,
        virtualMachine: { id: vm },
        enableIPForwarding: false,
        ...options.nicProperties,
        ipConfigurations: [
          {
            name: 'ipconfig1',
            id: `${nicId}/ipConfigurations/ipconfig1`,
            etag,
            type: 'Microsoft.Network/networkInterfaces/ipConfigurations',
            properties: {
              provisioningState: 'Succeeded',
              privateIPAddress: ip,
              privateIPAllocationMethod: 'Dynamic',
              privateIPAddressVersion: 'IPv4',
              subnet: { id: subnet.id },
              primary: true,
              ...(asgs.length ? { applicationSecurityGroups: asgs } : {}),
              ...options.primaryConfigProperties,
            },
          },
        ],
      },
    };
    this.nics.set(k, nic);
    return { name: nicName, id: nicId };
  }

  /** ipConfigurations on the VM's NICs other than `except`. */
  private otherConfigsOfVm(vm: string, except: string): number {
    let n = 0;
    for (const [k, nic] of this.nics) {
      if (k === except) continue;
      const of = (nic.properties?.virtualMachine as { id?: string } | undefined)?.id;
      if (sameArmId(of, vm)) n += ((nic.properties?.ipConfigurations as unknown[]) ?? []).length;
    }
    return n;
  }

  /** Addresses in use in a virtual network (every subnet of it). */
  private vnetInUse(subnetId: string): { name: string; inUse: number } {
    const ref = parseSubnetId(subnetId);
    const inUse = this.subnetsOf(ref.resourceGroup, ref.virtualNetwork).reduce(
      (n, s) => n + s.inUse,
      0,
    );
    return { name: ref.virtualNetwork, inUse };
  }

  /** Finishes operations whose time has come. */
  settle(): void {
    const now = this.now();
    for (const op of this.operations.values()) {
      if (op.settled || now < op.doneAt) continue;
      op.settled = true;
      if (this.busy.get(op.nicKey) === op.id) this.busy.delete(op.nicKey);
      const nic = this.nics.get(op.nicKey);
      if (nic && !op.failure) setProvisioningState(nic, 'Succeeded');
    }
    if (this.operations.size > MAX_OPERATIONS) {
      for (const [id, op] of this.operations) {
        if (this.operations.size <= MAX_OPERATIONS / 2) break;
        if (op.settled) this.operations.delete(id);
      }
    }
  }

  listNics(resourceGroup: string): ArmObject[] {
    this.settle();
    const prefix = `${resourceGroup.toLowerCase()}/`;
    return [...this.nics.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, nic]) => structuredClone(nic));
  }

  getNic(resourceGroup: string, name: string): ArmObject | undefined {
    this.settle();
    const nic = this.nics.get(key(resourceGroup, name));
    return nic ? structuredClone(nic) : undefined;
  }

  /** PUT of a whole NIC: returns the NIC as stored and the operation id to poll. */
  putNic(
    resourceGroup: string,
    name: string,
    body: unknown,
    ifMatch: string | undefined,
  ): { nic: ArmObject; operationId: string } {
    return this.putNicAt(key(resourceGroup, name), name, body, ifMatch);
  }

  /**
   * Adds an instance of a Uniform scale set: its NIC (in `subnetId`, not in
   * the resource group's NIC list) and its VM model. Returns its providerID.
   */
  addScaleSetVm(options: {
    resourceGroup: string;
    scaleSet: string;
    instanceId: string;
    subnetId: string;
    asgIds?: string[];
    /** As addVm's: the NIC's networkSecurityGroup, its primary's load-balancer pools... */
    nicProperties?: Record<string, unknown>;
    primaryConfigProperties?: Record<string, unknown>;
  }): AddedVm {
    const base = `/subscriptions/${this.subscriptionId}/resourceGroups/${options.resourceGroup}/providers/Microsoft.Compute/virtualMachineScaleSets/${options.scaleSet}`;
    const vm = `${base}/virtualMachines/${options.instanceId}`;
    const nicName = `${options.scaleSet}-nic`;
    const k = scaleSetKey(options.resourceGroup, options.scaleSet, options.instanceId, nicName);
    const added = this.addNicAt(
      k,
      `${vm}/networkInterfaces/${nicName}`,
      { ...options, name: options.scaleSet },
      nicName,
      options.subnetId,
      true,
      vm,
    );
    return {
      vmId: vm,
      providerID: `azure://${vm}`,
      nicName: added.name,
      nicId: added.id,
      primaryNicName: added.name,
    };
  }

  /** A Uniform scale set's NICs (every instance's). */
  listScaleSetNics(resourceGroup: string, scaleSet: string): ArmObject[] {
    this.settle();
    const prefix = `vmss:${resourceGroup.toLowerCase()}/${scaleSet.toLowerCase()}/`;
    return [...this.nics.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, nic]) => structuredClone(nic));
  }

  getScaleSetNic(rg: string, ss: string, id: string, nic: string): ArmObject | undefined {
    this.settle();
    const found = this.nics.get(scaleSetKey(rg, ss, id, nic));
    return found ? structuredClone(found) : undefined;
  }

  /** The scale-set VM's model: its network profile mirrors its NIC; its etag is the NIC's. */
  getScaleSetVm(rg: string, ss: string, id: string): ArmObject | undefined {
    this.settle();
    const found = this.scaleSetNic(rg, ss, id);
    return found ? scaleSetVmModel(found.nic, ss, id, this.location) : undefined;
  }

  /**
   * PUT of a scale-set VM: its network profile's ipConfigurations become its
   * NIC's (the same rules as a NIC PUT), If-Match against the VM's etag.
   */
  putScaleSetVm(
    rg: string,
    ss: string,
    id: string,
    body: unknown,
    ifMatch: string | undefined,
  ): { vm: ArmObject; operationId: string } {
    this.settle();
    const found = this.scaleSetNic(rg, ss, id);
    if (!found) throw new ArmHttpError(404, 'NotFound', `scale set VM ${ss}/${id} not found`);
    const configs = nicConfigsOfVmBody(body, String(found.nic.name));
    const { nic, operationId } = this.putNicAt(
      found.key,
      String(found.nic.name),
      { properties: { ...found.nic.properties, ipConfigurations: configs } },
      ifMatch,
      'vm',
    );
    return { vm: scaleSetVmModel(nic, ss, id, this.location), operationId };
  }

  private scaleSetNic(
    rg: string,
    ss: string,
    id: string,
  ): { key: string; nic: ArmObject } | undefined {
    const prefix = `vmss:${rg.toLowerCase()}/${ss.toLowerCase()}/${id.toLowerCase()}/`;
    for (const [k, nic] of this.nics) if (k.startsWith(prefix)) return { key: k, nic };
    return undefined;
  }

  private putNicAt(
    k: string,
    name: string,
    body: unknown,
    ifMatch: string | undefined,
    kind: 'nic' | 'vm' = 'nic',
  ): { nic: ArmObject; operationId: string } {
    this.settle();
    const stored = this.nics.get(k);
    if (!stored) {
      throw new ArmHttpError(
        404,
        'NotFound',
        `network interface ${name} not found (the emulator does not create NICs through PUT)`,
      );
    }
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== stored.etag) {
      throw new ArmHttpError(
        412,
        'PreconditionFailed',
        `etag ${ifMatch} does not match the resource's current etag`,
      );
    }
    if (this.busy.has(k)) {
      throw new ArmHttpError(
        409,
        'AnotherOperationInProgress',
        `another operation on ${name} is in progress`,
      );
    }
    const op: Operation = {
      id: randomUUID(),
      nicKey: k,
      resourceGroupId: resourceGroupIdOf(String(stored.id)),
      doneAt: this.now() + this.track(this.durationOf(kind)),
      settled: false,
    };
    const running = op.doneAt > this.now();
    const etag = newEtag();
    const state = running ? 'Updating' : 'Succeeded';
    const vm = (stored.properties?.virtualMachine as { id?: string } | undefined)?.id;
    let nic: ArmObject;
    try {
      const result = applyNicPut(stored, body, {
        nicId: String(stored.id),
        etag,
        provisioningState: state,
        subnetById: (id) => this.subnet(id),
        ...(vm
          ? { vm: { id: vm, otherConfigs: this.otherConfigsOfVm(vm, k), cap: this.perVmCap } }
          : {}),
        vnetRoom: (subnet) => {
          const { name: vnet, inUse } = this.vnetInUse(subnet.id);
          return { name: vnet, room: this.perVnetCap - inUse, cap: this.perVnetCap };
        },
      });
      nic = result.nic;
      this.counts.taken += result.taken;
      this.counts.freed += result.freed;
      this.nics.set(k, nic);
      for (const f of this.written) f(k, nic);
    } catch (err) {
      if (!(
        err instanceof ArmHttpError &&
        err.code === 'SubnetIsFull' &&
        this.subnetFullMode === 'lro'
      )) {
        throw err;
      }
      // Accepted, but the operation will end Failed and the NIC stays as it was.
      op.failure = err;
      nic = structuredClone(stored);
      setProvisioningState(nic, 'Updating');
    }
    this.operations.set(op.id, op);
    if (running) this.busy.set(k, op.id);
    else this.settle();
    return { nic: structuredClone(nic), operationId: op.id };
  }

  private track(ms: number): number {
    this.longestOperationMs = Math.max(this.longestOperationMs, ms);
    return ms;
  }

  /** How long an operation on a NIC (or a scale-set VM) runs. */
  durationOf(kind: 'nic' | 'vm'): number {
    if (this.timing === 'fast') return this.operationMs;
    const [min, max] = REALISTIC_OPERATION_MS[kind];
    return Math.round(min + this.random() * (max - min));
  }

  /** The resource group an operation's resource is in (undefined: no such operation). */
  operationScope(id: string): string | undefined {
    return this.operations.get(id)?.resourceGroupId;
  }

  operation(id: string): OperationStatus | undefined {
    this.settle();
    const op = this.operations.get(id);
    if (!op) return undefined;
    if (!op.settled) return { status: 'InProgress' };
    if (op.failure)
      return { status: 'Failed', error: { code: op.failure.code, message: op.failure.message } };
    return { status: 'Succeeded' };
  }

  /** An out-of-band change (another tool editing the NIC): `change` edits it, the etag moves. */
  modifyNic(resourceGroup: string, name: string, change: (nic: ArmObject) => void): void {
    const nic = this.nics.get(key(resourceGroup, name));
    if (!nic) throw new Error(`no NIC ${name}`);
    change(nic);
    nic.etag = newEtag();
  }

  /** Every NIC's key (standalone and scale-set instances'), for the other writers. */
  nicKeys(): string[] {
    return [...this.nics.keys()];
  }

  /** A NIC as a GET would return it, by key. */
  readNicAt(k: string): ArmObject | undefined {
    this.settle();
    const nic = this.nics.get(k);
    return nic ? structuredClone(nic) : undefined;
  }

  /**
   * Another writer's PUT of a whole NIC without If-Match, its body `nic` (a
   * read it took earlier): ipConfigurations added since are deleted and their
   * addresses freed. Returns what it removed, or undefined when ARM refused
   * (an operation in progress: the writer tries later).
   */
  overwriteNicAt(k: string, nic: ArmObject): Array<{ name: string; ip: string }> | undefined {
    const before = this.readNicAt(k);
    if (!before) return undefined;
    try {
      this.putNicAt(k, String(before.name), { properties: nic.properties }, undefined);
    } catch (err) {
      if (err instanceof ArmHttpError) return undefined;
      throw err;
    }
    const after = new Set(configsOf(this.nics.get(k)).map((c) => String(c.name).toLowerCase()));
    return configsOf(before)
      .filter((c) => !after.has(String(c.name).toLowerCase()))
      .map((c) => ({ name: String(c.name), ip: String(c.properties?.privateIPAddress) }));
  }

  /** Every NIC whose ipConfigurations hold `ip` (more than one would be a double assignment). */
  holdersOf(ip: string): string[] {
    const out: string[] = [];
    for (const nic of this.nics.values()) {
      for (const c of (nic.properties?.ipConfigurations as ArmObject[] | undefined) ?? []) {
        if (c.properties?.privateIPAddress === ip) out.push(String(nic.name));
      }
    }
    return out;
  }

  /** The NIC whose VM is `id`, for tests. */
  nicOfVm(id: string): ArmObject | undefined {
    for (const nic of this.nics.values()) {
      const vm = (nic.properties?.virtualMachine as { id?: string } | undefined)?.id;
      if (sameArmId(vm, id)) return structuredClone(nic);
    }
    return undefined;
  }
}

const scaleSetKey = (rg: string, ss: string, id: string, nic: string): string =>
  `vmss:${rg.toLowerCase()}/${ss.toLowerCase()}/${id.toLowerCase()}/${nic.toLowerCase()}`;

/** The scale-set VM resource as Compute returns it, its network profile from its NIC. */
function scaleSetVmModel(nic: ArmObject, ss: string, id: string, location: string): ArmObject {
  const vm = (nic.properties?.virtualMachine as { id: string }).id;
  const configs = (nic.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];
  const nsg = nic.properties?.networkSecurityGroup;
  const rest = scaleSetVmRest(vm, ss, id);
  return {
    name: `${ss}_${id}`,
    id: vm,
    instanceId: id,
    etag: nic.etag,
    type: 'Microsoft.Compute/virtualMachineScaleSets/virtualMachines',
    location,
    identity: rest.identity,
    properties: {
      provisioningState: nic.properties?.provisioningState,
      latestModelApplied: true,
      ...rest.properties,
      networkProfileConfiguration: {
        networkInterfaceConfigurations: [
          {
            name: nic.name,
            properties: {
              primary: true,
              ...(nsg ? { networkSecurityGroup: nsg } : {}),
              ipConfigurations: configs.map((c) => {
                const p = c.properties ?? {};
                return {
                  name: c.name,
                  properties: {
                    subnet: p.subnet,
                    primary: p.primary === true,
                    privateIPAddressVersion: 'IPv4',
                    ...(p.applicationSecurityGroups
                      ? { applicationSecurityGroups: p.applicationSecurityGroups }
                      : {}),
                    ...(p.loadBalancerBackendAddressPools
                      ? { loadBalancerBackendAddressPools: p.loadBalancerBackendAddressPools }
                      : {}),
                  },
                };
              }),
            },
          },
        ],
      },
    },
  };
}

/**
 * What a scale-set VM holds besides its network profile, as AKS-style nodes
 * have it: an image from a gallery in another tenant's subscription, an OS
 * profile with a Key Vault secret, a user-assigned identity. A write that
 * sends them back is checked on them (authorization.ts): the image always
 * refused (LinkedAuthorizationFailed, cilium/cilium#19695, Azure/AKS#1819).
 */
function scaleSetVmRest(
  vm: string,
  ss: string,
  id: string,
): { identity: ArmObject; properties: Record<string, unknown> } {
  const rg = resourceGroupIdOf(vm);
  const identity = `${rg}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${ss}-agentpool`;
  return {
    identity: {
      type: 'UserAssigned',
      userAssignedIdentities: {
        [identity]: {
          principalId: randomUUIDOf(identity),
          clientId: randomUUIDOf(`${identity}/client`),
        },
      },
    },
    properties: {
      hardwareProfile: { vmSize: 'Standard_D4s_v5' },
      storageProfile: {
        imageReference: {
          id: `/subscriptions/${OTHER_TENANT_SUBSCRIPTION}/resourceGroups/aks-images/providers/Microsoft.Compute/galleries/AKSUbuntu/images/2204gen2containerd/versions/2026.11.01`,
        },
        osDisk: { createOption: 'FromImage', osType: 'Linux', diskSizeGB: 128 },
      },
      osProfile: {
        computerName: `${ss}${id.padStart(6, '0')}`,
        adminUsername: 'azureuser',
        linuxConfiguration: { disablePasswordAuthentication: true },
        secrets: [
          {
            sourceVault: { id: `${rg}/providers/Microsoft.KeyVault/vaults/${ss}-kv` },
            vaultCertificates: [],
          },
        ],
      },
    },
  };
}

/** A stable uuid-looking id from a string (the identity's ids do not change between reads). */
function randomUUIDOf(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The NIC ipConfigurations a scale-set VM body asks for (its network profile's entry for `nic`). */
function nicConfigsOfVmBody(body: unknown, nic: string): ArmObject[] {
  const b = body as {
    properties?: {
      networkProfileConfiguration?: {
        networkInterfaceConfigurations?: Array<{
          name?: string;
          properties?: { ipConfigurations?: ArmObject[] };
        }>;
      };
    };
  };
  const entry = b?.properties?.networkProfileConfiguration?.networkInterfaceConfigurations?.find(
    (n) => n?.name?.toLowerCase() === nic.toLowerCase(),
  );
  const list = entry?.properties?.ipConfigurations;
  if (!Array.isArray(list)) {
    throw new ArmHttpError(
      400,
      'InvalidParameter',
      `networkProfileConfiguration has no network interface configuration ${nic}`,
    );
  }
  return list.map((c) => {
    const { privateIPAddressVersion: _v, ...p } = c.properties ?? {};
    return { name: c.name, properties: { ...p, privateIPAllocationMethod: 'Dynamic' } };
  });
}

function configsOf(nic: ArmObject | undefined): ArmObject[] {
  return (nic?.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];
}

function setProvisioningState(nic: ArmObject, state: string): void {
  const props = nic.properties ?? {};
  props.provisioningState = state;
  for (const c of (props.ipConfigurations as ArmObject[] | undefined) ?? []) {
    if (c.properties) c.properties.provisioningState = state;
  }
}
