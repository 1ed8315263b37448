// A Uniform scale set's instances: each one's NIC (kept with the other NICs,
// under its own key, not in the resource group's NIC list) and the VM model
// Compute returns for it, whose network profile mirrors that NIC. A PUT of
// the VM writes its network profile's ipConfigurations to the NIC, by the
// same rules as a NIC PUT.
//
// The scale set itself has a model (its network profile: the primary
// ipConfiguration only) and an upgrade policy, as Azure documents them
// ("Upgrade policy modes for Virtual Machine Scale Sets",
// learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-upgrade-policy;
// the REST API's UpgradeMode): a change of the model reaches the instances
// - Automatic: all at once ("the scale set might take down all virtual
//   machines at the same time to perform upgrades");
// - Rolling: in batches (maxBatchInstancePercent, 20 by default), one
//   after the other (the pause between batches is not modelled);
// - Manual: when someone upgrades them to the latest model (the
//   manualUpgrade action, `az vmss update-instances`; a node-image upgrade
//   does the same); until then an instance's latestModelApplied is false.
// Upgrading an instance to the latest model resets its network profile to
// the scale set's: the ipConfigurations written into the instance's own
// model are removed and their addresses freed.
import { createHash } from 'node:crypto';
import type { ArmObject } from './arm-object.ts';
import { OTHER_TENANT_SUBSCRIPTION } from './authorization.ts';
import { ArmHttpError } from './errors.ts';
import { resourceGroupIdOf, type AddedVm } from './nic-model.ts';
import type { NetworkInterfaces } from './nics.ts';

/** The NICs the instances' NICs are kept with (network.ts), the part of them used here. */
export type NicBook = Pick<
  NetworkInterfaces,
  | 'subscriptionId'
  | 'location'
  | 'settle'
  | 'addNicAt'
  | 'putNicAt'
  | 'readNicAt'
  | 'nicsUnder'
  | 'firstUnder'
>;

export type UpgradeMode = 'Automatic' | 'Manual' | 'Rolling';

export interface ScaleSetVmOptions {
  resourceGroup: string;
  scaleSet: string;
  instanceId: string;
  subnetId: string;
  /** The scale set's upgradePolicy.mode, set by its first instance (default Manual). */
  upgradePolicy?: UpgradeMode;
  asgIds?: string[];
  /** As addVm's: the NIC's networkSecurityGroup, its primary's load-balancer pools... */
  nicProperties?: Record<string, unknown>;
  primaryConfigProperties?: Record<string, unknown>;
}

const scaleSetKey = (rg: string, ss: string, id: string, nic: string): string =>
  `vmss:${rg.toLowerCase()}/${ss.toLowerCase()}/${id.toLowerCase()}/${nic.toLowerCase()}`;

interface ScaleSetState {
  resourceGroup: string;
  name: string;
  upgradePolicy: UpgradeMode;
  /** The model's version: bumped by each model change. */
  model: number;
  /** Per instance NIC key: the model version it runs. */
  applied: Map<string, number>;
}

/** Rolling upgrades' batch size: maxBatchInstancePercent, 20 by default (REST API, RollingUpgradePolicy). */
const ROLLING_BATCH_PERCENT = 20;

export class ScaleSetVms {
  private readonly book: NicBook;
  private readonly sets = new Map<string, ScaleSetState>();

  constructor(book: NicBook) {
    this.book = book;
  }

  /** The scale set resource as Compute returns it (its upgrade policy and model's network profile). */
  scaleSet(rg: string, ss: string): ArmObject | undefined {
    const set = this.sets.get(`${rg}/${ss}`.toLowerCase());
    if (!set) return undefined;
    const id = `/subscriptions/${this.book.subscriptionId}/resourceGroups/${set.resourceGroup}/providers/Microsoft.Compute/virtualMachineScaleSets/${set.name}`;
    return {
      name: set.name,
      id,
      type: 'Microsoft.Compute/virtualMachineScaleSets',
      location: this.book.location,
      sku: { name: 'Standard_D4s_v5', tier: 'Standard', capacity: set.applied.size },
      properties: {
        provisioningState: 'Succeeded',
        orchestrationMode: 'Uniform',
        upgradePolicy: { mode: set.upgradePolicy },
        virtualMachineProfile: { networkProfile: { networkInterfaceConfigurations: [] } },
      },
    };
  }

  /** Changes the scale set's upgrade policy (an operator's `az vmss update --set upgradePolicy.mode=`). */
  setUpgradePolicy(rg: string, ss: string, mode: UpgradeMode): void {
    const set = this.sets.get(`${rg}/${ss}`.toLowerCase());
    if (!set) throw new Error(`no scale set ${ss}`);
    set.upgradePolicy = mode;
  }

  /**
   * A change of the scale set's model (a new image, an extension): by its
   * upgrade policy, the instance NICs to reset now, in order (Automatic: all;
   * Rolling: all, batch after batch; Manual: none).
   */
  updateModel(rg: string, ss: string): string[][] {
    const set = this.sets.get(`${rg}/${ss}`.toLowerCase());
    if (!set) throw new Error(`no scale set ${ss}`);
    set.model++;
    const keys = [...set.applied.keys()].sort();
    if (set.upgradePolicy === 'Manual') return [];
    if (set.upgradePolicy === 'Automatic') return [keys];
    const size = Math.max(1, Math.floor((keys.length * ROLLING_BATCH_PERCENT) / 100));
    const batches: string[][] = [];
    for (let i = 0; i < keys.length; i += size) batches.push(keys.slice(i, i + size));
    return batches;
  }

  /**
   * The instance NICs a manual upgrade of `instanceIds` (all when absent)
   * resets: those not on the latest model (an instance on it is left alone).
   */
  manualUpgrade(rg: string, ss: string, instanceIds?: string[]): string[] {
    const set = this.sets.get(`${rg}/${ss}`.toLowerCase());
    if (!set) throw new Error(`no scale set ${ss}`);
    const prefix = `vmss:${rg.toLowerCase()}/${ss.toLowerCase()}/`;
    return [...set.applied.entries()]
      .filter(([k, version]) => {
        const id = k.slice(prefix.length).split('/')[0]!;
        const named = !instanceIds || instanceIds.map((i) => i.toLowerCase()).includes(id);
        return named && version < set.model;
      })
      .map(([k]) => k);
  }

  /** The instance at NIC key `k` now runs its scale set's latest model. */
  applied(k: string): void {
    for (const set of this.sets.values()) if (set.applied.has(k)) set.applied.set(k, set.model);
  }

  private latestApplied(k: string): boolean {
    for (const set of this.sets.values()) {
      const v = set.applied.get(k);
      if (v !== undefined) return v === set.model;
    }
    return true;
  }

  /**
   * Adds an instance of a Uniform scale set: its NIC (in `subnetId`, not in
   * the resource group's NIC list) and its VM model. Returns its providerID.
   */
  add(options: ScaleSetVmOptions): AddedVm {
    const base = `/subscriptions/${this.book.subscriptionId}/resourceGroups/${options.resourceGroup}/providers/Microsoft.Compute/virtualMachineScaleSets/${options.scaleSet}`;
    const vm = `${base}/virtualMachines/${options.instanceId}`;
    const nicName = `${options.scaleSet}-nic`;
    const k = scaleSetKey(options.resourceGroup, options.scaleSet, options.instanceId, nicName);
    const added = this.book.addNicAt(
      k,
      `${vm}/networkInterfaces/${nicName}`,
      { ...options, name: options.scaleSet },
      nicName,
      options.subnetId,
      true,
      vm,
    );
    const setKey = `${options.resourceGroup}/${options.scaleSet}`.toLowerCase();
    let set = this.sets.get(setKey);
    if (!set) {
      set = {
        resourceGroup: options.resourceGroup,
        name: options.scaleSet,
        upgradePolicy: options.upgradePolicy ?? 'Manual',
        model: 1,
        applied: new Map(),
      };
      this.sets.set(setKey, set);
    }
    set.applied.set(k, set.model);
    return {
      vmId: vm,
      providerID: `azure://${vm}`,
      nicName: added.name,
      nicId: added.id,
      primaryNicName: added.name,
    };
  }

  /** A Uniform scale set's NICs (every instance's). */
  nics(resourceGroup: string, scaleSet: string): ArmObject[] {
    return this.book.nicsUnder(`vmss:${resourceGroup.toLowerCase()}/${scaleSet.toLowerCase()}/`);
  }

  nic(rg: string, ss: string, id: string, nic: string): ArmObject | undefined {
    return this.book.readNicAt(scaleSetKey(rg, ss, id, nic));
  }

  /** The scale-set VM's model: its network profile mirrors its NIC; its etag is the NIC's. */
  vm(rg: string, ss: string, id: string): ArmObject | undefined {
    this.book.settle();
    const found = this.instanceNic(rg, ss, id);
    return found
      ? scaleSetVmModel(found.nic, ss, id, this.book.location, this.latestApplied(found.key))
      : undefined;
  }

  /**
   * PUT of a scale-set VM: its network profile's ipConfigurations become its
   * NIC's (the same rules as a NIC PUT), If-Match against the VM's etag.
   */
  putVm(
    rg: string,
    ss: string,
    id: string,
    body: unknown,
    ifMatch: string | undefined,
  ): { vm: ArmObject; operationId: string } {
    this.book.settle();
    const found = this.instanceNic(rg, ss, id);
    if (!found) throw new ArmHttpError(404, 'NotFound', `scale set VM ${ss}/${id} not found`);
    const configs = nicConfigsOfVmBody(body, String(found.nic.name));
    const { nic, operationId } = this.book.putNicAt(
      found.key,
      String(found.nic.name),
      { properties: { ...found.nic.properties, ipConfigurations: configs } },
      ifMatch,
      'vm',
    );
    return {
      vm: scaleSetVmModel(nic, ss, id, this.book.location, this.latestApplied(found.key)),
      operationId,
    };
  }

  private instanceNic(
    rg: string,
    ss: string,
    id: string,
  ): { key: string; nic: ArmObject } | undefined {
    return this.book.firstUnder(
      `vmss:${rg.toLowerCase()}/${ss.toLowerCase()}/${id.toLowerCase()}/`,
    );
  }
}

/** The scale-set VM resource as Compute returns it, its network profile from its NIC. */
function scaleSetVmModel(
  nic: ArmObject,
  ss: string,
  id: string,
  location: string,
  latestModelApplied: boolean,
): ArmObject {
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
      latestModelApplied,
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
                    privateIPAddressVersion: p.privateIPAddressVersion ?? 'IPv4',
                    ...(p.applicationSecurityGroups
                      ? { applicationSecurityGroups: p.applicationSecurityGroups }
                      : {}),
                    ...(p.loadBalancerBackendAddressPools
                      ? { loadBalancerBackendAddressPools: p.loadBalancerBackendAddressPools }
                      : {}),
                    ...(p.loadBalancerInboundNatPools
                      ? { loadBalancerInboundNatPools: p.loadBalancerInboundNatPools }
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
  // The model names no address: every ipConfiguration is Dynamic, of the
  // family its privateIPAddressVersion says (IPv4 by default; Azure docs,
  // "Deploy virtual machine scale sets with IPv6 in Azure").
  return list.map((c) => ({
    name: c.name,
    properties: { ...c.properties, privateIPAllocationMethod: 'Dynamic' },
  }));
}
