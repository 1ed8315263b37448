// The emulator's state as server.ts and the tests see it: virtual networks
// with subnets (subnets.ts), VMs with their NICs and the PUTs that change them
// (nics.ts), scale-set instances (scale-set-vms.ts) and the long-running
// operations the PUTs start (operations.ts). No HTTP here (server.ts serves it).
import { machineId } from './arm-ids.ts';
import type { ArmObject } from './arm-object.ts';
import { nicKey, type AddedVm, type VmOptions } from './nic-model.ts';
import { NetworkInterfaces, type SubnetFullMode } from './nics.ts';
import type { Ipv6PerNic } from './nic-rules.ts';
import { ArmOperations, type OperationStatus, type OperationTiming } from './operations.ts';
import { ScaleSetVms, type ScaleSetVmOptions, type UpgradeMode } from './scale-set-vms.ts';
import { VirtualNetworks, type EmulatedSubnet } from './subnets.ts';

export { REALISTIC_OPERATION_MS } from './operations.ts';
export type { OperationStatus, OperationTiming } from './operations.ts';
export type { AddedVm, VmOptions } from './nic-model.ts';
export type { UpgradeMode } from './scale-set-vms.ts';
export type { SubnetFullMode } from './nics.ts';
export type { Ipv6PerNic } from './nic-rules.ts';

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
   * How many IPv6 ipConfigurations a NIC may hold: `one` (default: what
   * Azure documents) or `many` (1 + 254, Azure/AKS#5722): nic-rules.ts.
   */
  ipv6PerNic?: Ipv6PerNic;
  /**
   * `fast` (default): every operation runs `operationMs`. `realistic`: as
   * ARM's run (azure-cli#25253): a NIC PUT 10–60 s, a scale-set VM update
   * 30–120 s, uniformly drawn.
   */
  timing?: OperationTiming;
  /** Draws realistic durations (default Math.random). */
  random?: () => number;
}

export class EmulatedNetwork {
  readonly subscriptionId: string;
  readonly location: string;
  private readonly vnets: VirtualNetworks;
  private readonly operations: ArmOperations;
  private readonly nics: NetworkInterfaces;
  private readonly scaleSets: ScaleSetVms;
  /** Addresses handed out and given back through PUTs, for tests and reports. */
  readonly counts: { taken: number; freed: number };
  /** Called after every accepted NIC write (other-writers.ts follows what comes back). */
  readonly written: Array<(key: string, nic: ArmObject) => void>;

  constructor(options: NetworkOptions) {
    this.subscriptionId = options.subscriptionId;
    this.location = options.location ?? 'westeurope';
    const now = options.now ?? Date.now;
    this.vnets = new VirtualNetworks(this.subscriptionId);
    this.operations = new ArmOperations({
      now,
      operationMs: options.operationMs ?? 0,
      timing: options.timing ?? 'fast',
      random: options.random ?? Math.random,
    });
    this.nics = new NetworkInterfaces({
      subscriptionId: this.subscriptionId,
      location: this.location,
      now,
      vnets: this.vnets,
      operations: this.operations,
      limits: {
        subnetFullMode: options.subnetFullMode ?? 'sync',
        perVmCap: options.perVmCap ?? 256,
        perVnetCap: options.perVnetCap ?? 65_536,
        ipv6PerNic: options.ipv6PerNic ?? 'one',
      },
    });
    this.scaleSets = new ScaleSetVms(this.nics);
    this.counts = this.nics.counts;
    this.written = this.nics.written;
  }

  /**
   * Adds a virtual network; returns the subnet ids by name. A subnet is its
   * IPv4 prefix, or that and an IPv6 /64 (dual-stack).
   */
  addVirtualNetwork(
    resourceGroup: string,
    name: string,
    subnets: Record<string, string | string[]>,
  ): Record<string, string> {
    return this.vnets.add(resourceGroup, name, subnets);
  }

  subnet(id: string): EmulatedSubnet | undefined {
    return this.vnets.subnet(id);
  }

  /** Every subnet of one virtual network. */
  subnetsOf(resourceGroup: string, virtualNetwork: string): EmulatedSubnet[] {
    return this.vnets.subnetsOf(resourceGroup, virtualNetwork);
  }

  /**
   * Adds a VM with its primary NIC (one primary Dynamic ipConfiguration in
   * `subnetId`) and, with `podNicSubnetId`, a second NIC whose primary
   * ipConfiguration is in that subnet (the pod NIC layout).
   */
  addVm(options: VmOptions): AddedVm {
    const id = machineId(this.subscriptionId, options.resourceGroup, options.name);
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
    const id = machineId(this.subscriptionId, options.resourceGroup, options.name);
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
    return this.nics.addNicAt(
      nicKey(options.resourceGroup, nicName),
      nicId,
      options,
      nicName,
      subnetId,
      primary,
      vm,
    );
  }

  listNics(resourceGroup: string): ArmObject[] {
    return this.nics.nicsUnder(`${resourceGroup.toLowerCase()}/`);
  }

  getNic(resourceGroup: string, name: string): ArmObject | undefined {
    return this.nics.readNicAt(nicKey(resourceGroup, name));
  }

  /** PUT of a whole NIC: returns the NIC as stored and the operation id to poll. */
  putNic(
    resourceGroup: string,
    name: string,
    body: unknown,
    ifMatch: string | undefined,
  ): { nic: ArmObject; operationId: string } {
    return this.nics.putNicAt(nicKey(resourceGroup, name), name, body, ifMatch);
  }

  /** Adds an instance of a Uniform scale set (scale-set-vms.ts). */
  addScaleSetVm(options: ScaleSetVmOptions): AddedVm {
    return this.scaleSets.add(options);
  }

  /** A Uniform scale set's NICs (every instance's). */
  listScaleSetNics(resourceGroup: string, scaleSet: string): ArmObject[] {
    return this.scaleSets.nics(resourceGroup, scaleSet);
  }

  getScaleSetNic(rg: string, ss: string, id: string, nic: string): ArmObject | undefined {
    return this.scaleSets.nic(rg, ss, id, nic);
  }

  /** The scale set (its upgrade policy), as Compute returns it. */
  getScaleSet(rg: string, ss: string): ArmObject | undefined {
    return this.scaleSets.scaleSet(rg, ss);
  }

  setUpgradePolicy(rg: string, ss: string, mode: UpgradeMode): void {
    this.scaleSets.setUpgradePolicy(rg, ss, mode);
  }

  /**
   * The scale set's model changes; by its upgrade policy, instances are
   * upgraded to it now (scale-set-vms.ts): their NICs, batch after batch.
   */
  updateScaleSetModel(rg: string, ss: string): string[][] {
    return this.scaleSets.updateModel(rg, ss);
  }

  /** The NICs of the instances a manual upgrade resets (all when `instanceIds` is absent). */
  manualUpgrade(rg: string, ss: string, instanceIds?: string[]): string[] {
    return this.scaleSets.manualUpgrade(rg, ss, instanceIds);
  }

  /** The instance whose NIC is at `k` now runs its scale set's latest model. */
  modelApplied(k: string): void {
    this.scaleSets.applied(k);
  }

  /** The scale-set VM's model: its network profile mirrors its NIC; its etag is the NIC's. */
  getScaleSetVm(rg: string, ss: string, id: string): ArmObject | undefined {
    return this.scaleSets.vm(rg, ss, id);
  }

  /** PUT of a scale-set VM: its network profile's ipConfigurations become its NIC's. */
  putScaleSetVm(
    rg: string,
    ss: string,
    id: string,
    body: unknown,
    ifMatch: string | undefined,
  ): { vm: ArmObject; operationId: string } {
    return this.scaleSets.putVm(rg, ss, id, body, ifMatch);
  }

  /** The longest operation started (ms), for the bench's bound. */
  get longestOperationMs(): number {
    return this.operations.longestOperationMs;
  }

  /** How long an operation on a NIC (or a scale-set VM) runs. */
  durationOf(kind: 'nic' | 'vm'): number {
    return this.operations.durationOf(kind);
  }

  /** The resource group an operation's resource is in (undefined: no such operation). */
  operationScope(id: string): string | undefined {
    return this.operations.scope(id);
  }

  operation(id: string): OperationStatus | undefined {
    this.settle();
    return this.operations.status(id);
  }

  /** An out-of-band change (another tool editing the NIC): `change` edits it, the etag moves. */
  modifyNic(resourceGroup: string, name: string, change: (nic: ArmObject) => void): void {
    this.nics.modifyNic(resourceGroup, name, change);
  }

  /** Every NIC's key (standalone and scale-set instances'), for the other writers. */
  nicKeys(): string[] {
    return this.nics.nicKeys();
  }

  /** A NIC as a GET would return it, by key. */
  readNicAt(k: string): ArmObject | undefined {
    return this.nics.readNicAt(k);
  }

  /** Another writer's PUT of a whole NIC without If-Match (nics.ts), its operation `durationMs` long. */
  overwriteNicAt(
    k: string,
    nic: ArmObject,
    durationMs?: number,
  ): Array<{ name: string; ip: string }> | undefined {
    return this.nics.overwriteNicAt(k, nic, durationMs);
  }

  /** Another writer's operation supersedes the one running on the NIC at `k` (nics.ts). */
  supersede(k: string, change?: (nic: ArmObject) => void): boolean {
    return this.nics.supersede(k, change);
  }

  /** Every NIC whose ipConfigurations hold `ip` (more than one would be a double assignment). */
  holdersOf(ip: string): string[] {
    return this.nics.holdersOf(ip);
  }

  /** The NIC whose VM is `id`, for tests. */
  nicOfVm(id: string): ArmObject | undefined {
    return this.nics.nicOfVm(id);
  }

  /** Finishes operations whose time has come. */
  settle(): void {
    this.nics.settle();
  }
}
