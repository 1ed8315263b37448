// The thin adapter between the Azure backend and @azure/arm-network: the
// five calls the backend makes, and what their errors mean.
import type {
  NetworkInterface,
  NetworkManagementClient,
  Subnet,
  VirtualNetworkUsage,
} from '@azure/arm-network';
import type { SubnetRef } from './arm/ids.ts';
import { sameArmId } from './arm/ids.ts';

export interface NicApi {
  /** Every NIC of the resource group (paged). */
  list(): AsyncIterable<NetworkInterface>;
  get(name: string): Promise<NetworkInterface>;
  /**
   * ONE PUT of the whole NIC with `If-Match: etag`, its long-running
   * operation followed to its end (Azure-AsyncOperation), then the NIC
   * re-read: resolves to the NIC as written.
   */
  put(name: string, nic: NetworkInterface, etag: string | undefined): Promise<NetworkInterface>;
  podSubnet(): Promise<Subnet>;
  /** The pod subnet's entry of virtualNetworks.listUsage; undefined when absent. */
  podSubnetUsage(): Promise<VirtualNetworkUsage | undefined>;
}

export function sdkNicApi(
  client: NetworkManagementClient,
  resourceGroup: string,
  podSubnet: SubnetRef,
  /** Poll interval when the service gives no Retry-After (the SDK's default: 2 s). */
  pollIntervalMs?: number,
): NicApi {
  return {
    list: () => client.networkInterfaces.list(resourceGroup),
    get: (name) => client.networkInterfaces.get(resourceGroup, name),
    // The SDK's poller does the rest: it polls the Azure-AsyncOperation URL
    // until Succeeded or Failed, then GETs the NIC (the re-read) and
    // resolves to it. The v39 SDK has no ifMatch option: a header it is.
    put: async (name, nic, etag) =>
      client.networkInterfaces.createOrUpdate(resourceGroup, name, nic, {
        ...(etag ? { requestOptions: { headers: { 'If-Match': etag } } } : {}),
        ...(pollIntervalMs !== undefined ? { updateIntervalInMs: pollIntervalMs } : {}),
      }),
    podSubnet: () =>
      client.subnets.get(podSubnet.resourceGroup, podSubnet.virtualNetwork, podSubnet.subnet),
    podSubnetUsage: async () => {
      for await (const usage of client.virtualNetworks.listUsage(
        podSubnet.resourceGroup,
        podSubnet.virtualNetwork,
      )) {
        if (sameArmId(usage.id, podSubnet.id)) return usage;
      }
      return undefined;
    },
  };
}

export type ArmErrorKind =
  | 'precondition-failed'
  | 'subnet-full'
  | 'vnet-full'
  | 'limit'
  | 'forbidden'
  | 'not-found'
  | 'other';

/** Codes of Azure's caps on a NIC's or a VM's addresses (see emulator/README.md). */
const LIMIT_CODES = new Set([
  'NetworkInterfaceIpConfigurationLimitReached',
  'PrivateIPAddressesPerVirtualMachineLimitReached',
]);

/**
 * What an ARM error means for a round. SubnetIsFull comes two ways: a
 * RestError with that code (HTTP 400), or a failed long-running operation,
 * which core-lro reports as "The long-running operation has failed. <code>. <message>".
 */
export function armErrorKind(err: unknown): ArmErrorKind {
  const e = err as { statusCode?: number; code?: string; message?: string } | undefined;
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
