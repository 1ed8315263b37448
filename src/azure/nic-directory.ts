// Which NIC is a node's: the Node's spec.providerID names its VM; the VM's
// NICs are the resource group's NICs whose virtualMachine.id is that VM's id
// (compared without case), and the node's NIC is the one of them whose
// primary ipConfiguration is in the pod subnet (nic-choice.ts). A VM with
// no such NIC is refused (NicNotInPodSubnet) from the list, without a NIC
// write; it is looked at again once the list is a minute old. The VM→NICs map comes from ONE paged list of the
// resource group's NICs, not a list per node. A node not in it is listed
// again once if the list began before the node was first asked for (a new
// VM: every node new at that time shares the list), else at most once a
// minute (a node that never has a NIC costs no more). Concurrent lookups
// share one list in flight. A Uniform scale set's NICs are not in the
// resource group's list: each scale set a Node's providerID names is listed
// with it (virtualMachineScaleSets/SS/networkInterfaces), in the same relist. A node whose Node object is gone (so no
// providerID) is found by its NC primary address, `pool-monitor-nc-primary`
// on the NIC, from the same list.
import type { NetworkInterface } from '@azure/arm-network';
import { parseProviderId } from './arm/ids.ts';
import type { NicRef } from './nic-api.ts';
import { nicRefOf } from './nic-api.ts';
import { chooseNic } from './nic-choice.ts';
import { isNcPrimaryName, NC_PRIMARY_NAME } from './ip-family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { NodeRef } from '../fulfiller/backend.ts';
import { NodeSetupError } from '../fulfiller/backend.ts';

export interface NicDirectoryOptions {
  /** Every NIC of the resource group (the SDK's paged list). */
  list: () => AsyncIterable<NetworkInterface>;
  /** Every NIC of a Uniform scale set. */
  listScaleSet?: (resourceGroup: string, scaleSet: string) => AsyncIterable<NetworkInterface>;
  /**
   * The pod subnet: the node's NIC is the VM's NIC whose primary
   * ipConfiguration is in it. Absent: the VM's primary NIC, in its own subnet.
   */
  podSubnetId?: string;
  now?: () => number;
  /** Shortest time between two lists, in ms (default 60 s). */
  minRelistMs?: number;
}

export interface FoundNic {
  name: string;
  /** How to read and write it (a standalone NIC, or a scale-set instance's). */
  ref: NicRef;
  /** The NIC as the list showed it (its etag may be stale by now). */
  listed: NetworkInterface;
  /** The subnet its pod IPs go in. */
  podSubnetId: string;
  /** The VM's own address (its primary NIC's primary IP). */
  nodeIP?: string;
  /** ipConfigurations on the VM's other NICs. */
  otherConfigs: number;
}

/** The VM→NICs map of one list. */
export function mapVmsToNics(nics: NetworkInterface[]): Map<string, NetworkInterface[]> {
  const byVm = new Map<string, NetworkInterface[]>();
  for (const nic of nics) {
    const vm = nic.virtualMachine?.id?.replace(/\/$/, '').toLowerCase();
    if (!vm || !nic.name) continue;
    byVm.set(vm, [...(byVm.get(vm) ?? []), nic]);
  }
  return byVm;
}

/** NC primary address (either family's) → NIC, for every NIC that has one. */
export function ncPrimaries(nics: NetworkInterface[]): Map<string, NetworkInterface> {
  const out = new Map<string, NetworkInterface>();
  for (const nic of nics) {
    for (const c of nic.ipConfigurations ?? []) {
      if (isNcPrimaryName(c.name) && c.privateIPAddress && nic.name) {
        out.set(c.privateIPAddress, nic);
      }
    }
  }
  return out;
}

export class NicDirectory {
  private readonly options: NicDirectoryOptions;
  private readonly now: () => number;
  private readonly minRelistMs: number;
  private map = new Map<string, NetworkInterface[]>();
  /** NC primary address → NIC, from the same list. */
  private byNcPrimary = new Map<string, NetworkInterface>();
  /** When the last list began. */
  private listedAt = -Infinity;
  /** VMs not found yet: how many lists had begun when each was first asked for. */
  private readonly firstAsked = new Map<string, number>();
  private inFlight?: Promise<void>;
  /** Uniform scale sets named by the Nodes looked up: resource group and name. */
  private readonly scaleSets = new Map<string, { resourceGroup: string; name: string }>();
  /** Lists made, for tests and reports. */
  lists = 0;

  /** When the last complete list began (-Infinity: none yet). */
  get listBegan(): number {
    return this.listedAt;
  }

  /** Whether a list is on its way. */
  get listing(): boolean {
    return this.inFlight !== undefined;
  }

  constructor(options: NicDirectoryOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.minRelistMs = options.minRelistMs ?? 60_000;
  }

  /** The node's NIC as last listed, without listing (undefined: not known yet, or unfit). */
  peek(node: NodeRef): NetworkInterface | undefined {
    if (!node.providerID) return undefined;
    try {
      const nics = this.map.get(parseProviderId(node.providerID).id.toLowerCase());
      const choice = nics ? chooseNic(nics, this.options.podSubnetId) : undefined;
      return choice && 'nic' in choice ? choice.nic : undefined;
    } catch {
      return undefined;
    }
  }

  async lookup(node: NodeRef): Promise<FoundNic> {
    if (!node.providerID) {
      // Only the Node can cure these two: no backoff retry (a Node change looks again).
      throw new NodeSetupError('NoProviderID', `node ${node.name} has no spec.providerID`, {
        waitsForChange: true,
      });
    }
    let vm: string;
    try {
      const ref = parseProviderId(node.providerID);
      vm = ref.id.toLowerCase();
      if (ref.scaleSet) {
        const k = `${ref.resourceGroup}/${ref.scaleSet.name}`.toLowerCase();
        if (!this.scaleSets.has(k)) {
          if (!this.options.listScaleSet) {
            throw new Error(`scale set instances need the Compute client`);
          }
          this.scaleSets.set(k, { resourceGroup: ref.resourceGroup, name: ref.scaleSet.name });
        }
      }
    } catch (err) {
      throw new NodeSetupError('BadProviderID', `node ${node.name}: ${(err as Error).message}`, {
        waitsForChange: true,
      });
    }
    const choose = () => {
      const nics = this.map.get(vm);
      return nics ? chooseNic(nics, this.options.podSubnetId) : undefined;
    };
    let choice = choose();
    if (!choice) {
      // Lists begun before this VM was first asked for.
      const asked = this.firstAsked.get(vm) ?? this.lists;
      this.firstAsked.set(vm, asked);
      const stale = this.now() - this.listedAt >= this.minRelistMs;
      if (this.inFlight || stale || this.lists === asked) {
        await this.relist();
        choice = choose();
      }
    } else if ('unfit' in choice && this.now() - this.listedAt >= this.minRelistMs) {
      // Its NICs may have changed since (a pod NIC attached): one list a minute at most.
      await this.relist();
      choice = choose();
    }
    if (choice) this.firstAsked.delete(vm);
    if (!choice) {
      throw new NodeSetupError(
        'NicNotFound',
        `node ${node.name}: no NIC of VM ${vm} in the resource group`,
      );
    }
    if ('unfit' in choice) {
      // Only a Node or NIC change cures it: no backoff retry (the resync looks again).
      throw new NodeSetupError('NicNotInPodSubnet', `node ${node.name}: ${choice.unfit}`, {
        waitsForChange: true,
      });
    }
    return {
      name: choice.nic.name!,
      ref: nicRefOf(choice.nic),
      listed: choice.nic,
      podSubnetId: choice.podSubnetId,
      otherConfigs: choice.otherConfigs,
      ...(choice.nodeIP ? { nodeIP: choice.nodeIP } : {}),
    };
  }

  /**
   * The NIC whose NC primary ipConfiguration has this address (a node whose
   * Node object is gone); lists again when the list is older than a minute.
   * Undefined: no NIC has it (the VM went, and its addresses with it).
   */
  async findByNcPrimary(ip: string): Promise<NetworkInterface | undefined> {
    let nic = this.byNcPrimary.get(ip);
    if (!nic && (this.inFlight || this.now() - this.listedAt >= this.minRelistMs)) {
      await this.relist();
      nic = this.byNcPrimary.get(ip);
    }
    return nic;
  }

  /**
   * The NIC of a node being let go: by its providerID while the Node exists;
   * once it is gone, the NIC holding its NC primary address. Undefined: no
   * such NIC any more.
   */
  async locate(
    node: NodeRef,
    containers: readonly NetworkContainer[],
  ): Promise<NicRef | undefined> {
    if (node.providerID) {
      try {
        return (await this.lookup(node)).ref;
      } catch (err) {
        if (err instanceof NodeSetupError) return undefined;
        throw err;
      }
    }
    // Any family's NC primary names the NIC (IPv4 first).
    const container = containers.find((nc) => nc.primaryIP);
    if (!container?.primaryIP) return undefined;
    const nic = await this.findByNcPrimary(container.primaryIP);
    // Azure may have handed a gone VM's NC primary address to another NIC:
    // that NIC is this node's only if its own primary address is the node's too.
    const nodeIP =
      (nic && this.nodeIpOf(nic)) ??
      nic?.ipConfigurations?.find((c) => c.primary === true)?.privateIPAddress;
    if (!nic?.name || (container.nodeIP && nodeIP !== container.nodeIP)) return undefined;
    return nicRefOf(nic);
  }

  /** The address of the VM a NIC belongs to (its primary NIC's primary IP), as last listed. */
  nodeIpOf(nic: NetworkInterface): string | undefined {
    const vm = nic.virtualMachine?.id?.replace(/\/$/, '').toLowerCase();
    const nics = vm ? this.map.get(vm) : undefined;
    const choice = nics ? chooseNic(nics, this.options.podSubnetId) : undefined;
    return choice && 'nic' in choice ? choice.nodeIP : undefined;
  }

  /** The pod subnets of the NICs, as last listed, that hold a node's network container. */
  subnetsInUse(): string[] {
    const ids = new Map<string, string>();
    for (const nics of this.map.values()) {
      const choice = chooseNic(nics, this.options.podSubnetId);
      if (!('nic' in choice)) continue;
      const holds = (choice.nic.ipConfigurations ?? []).some((c) => c.name === NC_PRIMARY_NAME);
      if (holds) ids.set(choice.podSubnetId.toLowerCase(), choice.podSubnetId);
    }
    return [...ids.values()];
  }

  /** Forgets a node's NIC (it is gone): its next lookup lists again, at most once a minute. */
  drop(node: NodeRef): void {
    if (!node.providerID) return;
    try {
      this.map.delete(parseProviderId(node.providerID).id.toLowerCase());
    } catch {
      // not an Azure VM: nothing cached
    }
  }

  /** Lists the resource group's NICs (sharing a list already in flight). */
  relist(): Promise<void> {
    this.inFlight ??= (async () => {
      try {
        const nics: NetworkInterface[] = [];
        const began = this.now();
        this.lists++; // counted as it begins
        for await (const nic of this.options.list()) nics.push(nic);
        for (const ss of this.scaleSets.values()) {
          for await (const nic of this.options.listScaleSet!(ss.resourceGroup, ss.name)) {
            nics.push(nic);
          }
        }
        this.map = mapVmsToNics(nics);
        this.byNcPrimary = ncPrimaries(nics);
        this.listedAt = began;
      } finally {
        this.inFlight = undefined;
      }
    })();
    return this.inFlight;
  }
}
