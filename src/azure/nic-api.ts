// The thin adapter between the Azure backend and the SDKs: the calls the
// backend makes, and what their errors mean. A NIC is either a standalone
// NIC (a VM's, a Flexible scale set instance's) written by one PUT of the
// NIC, or a Uniform scale-set instance's NIC, which cannot be written
// directly: its ipConfigurations live in the scale-set VM's network profile
// (@azure/arm-compute: GET the VM, update it with If-Match, wait for the
// operation), and its addresses are read back from the NIC. Its etag, for
// the backend, is the scale-set VM's.
import type {
  NetworkInterface,
  NetworkManagementClient,
  Subnet,
  VirtualNetworkUsage,
} from '@azure/arm-network';
import type {
  ComputeManagementClient,
  VirtualMachineScaleSetIPConfiguration,
} from '@azure/arm-compute';
import type { SubnetRef } from './arm/ids.ts';
import { parseScaleSetNicId, sameArmId } from './arm/ids.ts';

/** Which NIC to read or write. */
export type NicRef =
  | { kind: 'nic'; name: string }
  | { kind: 'scale-set'; resourceGroup: string; scaleSet: string; instanceId: string; nic: string };

/** The ref of a NIC as listed (a Uniform scale-set instance's NIC by its id). */
export function nicRefOf(nic: NetworkInterface): NicRef {
  const ss = parseScaleSetNicId(nic.id);
  return ss ? { kind: 'scale-set', ...ss } : { kind: 'nic', name: nic.name! };
}

/** For messages: the NIC's name, with its scale-set instance. */
export function nicLabel(ref: NicRef): string {
  return ref.kind === 'nic'
    ? ref.name
    : `${ref.nic} (scale set ${ref.scaleSet}, instance ${ref.instanceId})`;
}

export const sameNicRef = (a: NicRef, b: NicRef): boolean =>
  nicLabel(a).toLowerCase() === nicLabel(b).toLowerCase();

export interface NicApi {
  /** Every NIC of the resource group (paged). */
  list(): AsyncIterable<NetworkInterface>;
  /** Every NIC of a Uniform scale set (paged). */
  listScaleSet(resourceGroup: string, scaleSet: string): AsyncIterable<NetworkInterface>;
  get(ref: NicRef): Promise<NetworkInterface>;
  /**
   * ONE PUT of the whole NIC with `If-Match: etag`, its long-running
   * operation followed to its end (Azure-AsyncOperation), then the NIC
   * re-read: resolves to the NIC as written.
   */
  put(ref: NicRef, nic: NetworkInterface, etag: string | undefined): Promise<NetworkInterface>;
  /** A Uniform scale set's upgradePolicy.mode (undefined: ARM gives none). */
  scaleSetUpgradeMode(resourceGroup: string, scaleSet: string): Promise<string | undefined>;
  /** A pod subnet (its name and prefix). */
  subnet(ref: SubnetRef): Promise<Subnet>;
  /** The subnet's entry of its virtual network's listUsage; undefined when absent. */
  subnetUsage(ref: SubnetRef): Promise<VirtualNetworkUsage | undefined>;
}

export function sdkNicApi(
  client: NetworkManagementClient,
  resourceGroup: string,
  /** Poll interval when the service gives no Retry-After (the SDK's default: 2 s). */
  pollIntervalMs?: number,
  /** The Compute client (its own budget), for Uniform scale-set instances. */
  compute?: ComputeManagementClient,
): NicApi {
  const interval = pollIntervalMs !== undefined ? { updateIntervalInMs: pollIntervalMs } : {};
  const computeOf = (): ComputeManagementClient => {
    if (!compute) throw new Error('no Compute client: Uniform scale sets need one');
    return compute;
  };
  /** The instance's NIC (its addresses), with its scale-set VM's etag (read unless given). */
  const scaleSetNic = async (ref: Extract<NicRef, { kind: 'scale-set' }>, vmEtag?: string) => {
    const [nic, etag] = await Promise.all([
      client.networkInterfaces.getVirtualMachineScaleSetNetworkInterface(
        ref.resourceGroup,
        ref.scaleSet,
        ref.instanceId,
        ref.nic,
      ),
      vmEtag ??
        computeOf()
          .virtualMachineScaleSetVMs.get(ref.resourceGroup, ref.scaleSet, ref.instanceId)
          .then((vm) => vm.etag),
    ]);
    return { ...nic, ...(etag ? { etag } : {}) };
  };
  return {
    list: () => client.networkInterfaces.list(resourceGroup),
    listScaleSet: (rg, ss) =>
      client.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces(rg, ss),
    get: (ref) =>
      ref.kind === 'nic' ? client.networkInterfaces.get(resourceGroup, ref.name) : scaleSetNic(ref),
    // The SDK's poller does the rest: it polls the Azure-AsyncOperation URL
    // until Succeeded or Failed, then GETs the NIC (the re-read) and
    // resolves to it. The v39 SDK has no ifMatch option: a header it is.
    put: async (ref, nic, etag) => {
      if (ref.kind === 'nic') {
        return client.networkInterfaces.createOrUpdate(resourceGroup, ref.name, nic, {
          ...(etag ? { requestOptions: { headers: { 'If-Match': etag } } } : {}),
          ...interval,
        });
      }
      const vms = computeOf().virtualMachineScaleSetVMs;
      const vm = await vms.get(ref.resourceGroup, ref.scaleSet, ref.instanceId);
      const entry = vm.networkProfileConfiguration?.networkInterfaceConfigurations?.find(
        (n) => n.name.toLowerCase() === ref.nic.toLowerCase(),
      );
      if (!entry) {
        throw new Error(
          `scale-set VM ${ref.scaleSet}/${ref.instanceId} has no NIC configuration ${ref.nic}`,
        );
      }
      const had = new Map((entry.ipConfigurations ?? []).map((c) => [c.name.toLowerCase(), c]));
      entry.ipConfigurations = (nic.ipConfigurations ?? []).map(
        (c): VirtualMachineScaleSetIPConfiguration =>
          had.get(c.name!.toLowerCase()) ?? {
            name: c.name!,
            subnet: { id: c.subnet!.id! },
            primary: c.primary === true,
            // The model names no address: each new one is Dynamic, of its family.
            privateIPAddressVersion: c.privateIPAddressVersion === 'IPv6' ? 'IPv6' : 'IPv4',
            ...(c.applicationSecurityGroups?.length
              ? {
                  applicationSecurityGroups: c.applicationSecurityGroups.map((a) => ({
                    id: a.id!,
                  })),
                }
              : {}),
          },
      );
      // Only the network profile (and the location a PUT names), as
      // cloud-provider-azure's EnsureHostInPool sends it: the VM as read
      // carries its image (a gallery in another tenant is refused,
      // LinkedAuthorizationFailed: cilium/cilium#19695, Azure/AKS#1819), its
      // OS profile and its identities (userAssignedIdentities/assign/action),
      // none of which this write is about. The VM's etag as the backend last
      // read it goes as If-Match: a model changed since is a 412.
      const networkOnly = {
        location: vm.location,
        networkProfileConfiguration: vm.networkProfileConfiguration,
      };
      const written = await vms.update(
        ref.resourceGroup,
        ref.scaleSet,
        ref.instanceId,
        networkOnly,
        { ...(etag ? { ifMatch: etag } : {}), ...interval },
      );
      // The poller's last read is the VM as written: its etag is the next If-Match.
      return scaleSetNic(ref, written.etag);
    },
    scaleSetUpgradeMode: async (rg, ss) =>
      (await computeOf().virtualMachineScaleSets.get(rg, ss)).upgradePolicy?.mode,
    subnet: (ref) => client.subnets.get(ref.resourceGroup, ref.virtualNetwork, ref.subnet),
    subnetUsage: async (ref) => {
      for await (const usage of client.virtualNetworks.listUsage(
        ref.resourceGroup,
        ref.virtualNetwork,
      )) {
        if (sameArmId(usage.id, ref.id)) return usage;
      }
      return undefined;
    },
  };
}

export type ArmErrorKind =
  | 'precondition-failed'
  | 'superseded'
  | 'subnet-full'
  | 'vnet-full'
  | 'limit'
  | 'forbidden'
  | 'not-found'
  | 'other';

/**
 * Codes of Azure's caps on a NIC's or a VM's addresses (see emulator/README.md:
 * ARM's codes are not public, these are the emulator's; another code is an
 * error like any other, retried with backoff, its message in the log).
 */
const LIMIT_CODES = new Set([
  'NetworkInterfaceIpConfigurationLimitReached',
  'PrivateIPAddressesPerVirtualMachineLimitReached',
  'NetworkInterfaceIPv6IpConfigurationLimitReached',
]);

/**
 * What an ARM error means for a round. SubnetIsFull comes two ways: a
 * RestError with that code (HTTP 400), or a failed long-running operation,
 * which core-lro reports as "The long-running operation has failed. <code>. <message>".
 * An operation ARM ended `Canceled` (Network cancels a running operation a
 * later one on the same resource supersedes:
 * CanceledAndSupersededDueToAnotherOperation) is reported by core-lro as
 * "Operation was canceled", without the body: the NIC is what the later
 * operation made it, so it is read again, like a 412 (as
 * kubernetes-sigs/cloud-provider-azure's azure_backoff.go drops its cached
 * copy on that code).
 */
export function armErrorKind(err: unknown): ArmErrorKind {
  const e = err as { statusCode?: number; code?: string; message?: string } | undefined;
  if (e?.code === 'CanceledAndSupersededDueToAnotherOperation') return 'superseded';
  if (e?.statusCode === undefined && e?.message === 'Operation was canceled') return 'superseded';
  if (e?.code === 'SubnetIsFull') return 'subnet-full';
  if (/long-running operation has failed\. SubnetIsFull\b/.test(e?.message ?? ''))
    return 'subnet-full';
  if (e?.code === 'PrivateIPAddressesPerVirtualNetworkLimitReached') return 'vnet-full';
  if (e?.code && LIMIT_CODES.has(e.code)) return 'limit';
  if (e?.statusCode === 403) return 'forbidden';
  if (e?.statusCode === 412) return 'precondition-failed';
  if (e?.statusCode === 404) return 'not-found';
  return 'other';
}
