// The Azure backend's settings (the fulfiller's --azure-* flags) and their
// validation, with one-line errors naming the flag. Pure: no SDK is loaded,
// so the command line checks them before anything starts.
import { checkEndpoint, DEFAULT_ARM_ENDPOINT } from './arm/endpoint.ts';
import { parseSubnetId } from './arm/ids.ts';
import { validateBucket } from './arm/token-bucket.ts';

export interface AzureSettings {
  subscriptionId: string;
  /** The resource group holding the nodes' NICs. */
  resourceGroup: string;
  /**
   * Full ARM id of the pod subnet. Absent: each node's pod IPs go in its own
   * NIC's subnet (node subnet layout).
   */
  podSubnetId?: string;
  endpoint?: string;
  /** Bearer token file; absent: DefaultAzureCredential. */
  tokenFile?: string;
  /** Writes (NIC PUTs, scale-set VM updates) per second and at once. */
  qps?: number;
  burst?: number;
  /** Reads (GETs, lists, operation polls) per second and at once. */
  readQps?: number;
  readBurst?: number;
}

/** Writes: a fifth of what ARM refills (10/s), a tenth of its bucket (200). */
export const DEFAULT_AZURE_QPS = 4;
export const DEFAULT_AZURE_BURST = 20;
/** Reads: two fifths of what ARM refills (25/s), a fifth of its bucket (250). */
export const DEFAULT_AZURE_READ_QPS = 10;
export const DEFAULT_AZURE_READ_BURST = 50;

const SUBSCRIPTION = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RESOURCE_GROUP = /^[-\w.()]{1,90}$/u;

/** Validates settings; throws a one-line error naming the flag. */
export function validateAzureSettings(s: AzureSettings): Required<
  Omit<AzureSettings, 'tokenFile' | 'podSubnetId'>
> & {
  tokenFile?: string;
  podSubnetId?: string;
} {
  if (!SUBSCRIPTION.test(s.subscriptionId ?? '')) {
    throw new Error(
      `--azure-subscription-id must be a subscription GUID, got "${s.subscriptionId ?? ''}"`,
    );
  }
  if (!RESOURCE_GROUP.test(s.resourceGroup ?? '') || s.resourceGroup.endsWith('.')) {
    throw new Error(
      `--azure-resource-group: invalid resource group name "${s.resourceGroup ?? ''}"`,
    );
  }
  if (s.podSubnetId !== undefined) checkPodSubnetId(s.podSubnetId, s.subscriptionId);
  let endpoint: string;
  try {
    endpoint = checkEndpoint(s.endpoint ?? DEFAULT_ARM_ENDPOINT);
  } catch (err) {
    throw new Error(`--azure-endpoint: ${(err as Error).message}`);
  }
  const qps = s.qps ?? DEFAULT_AZURE_QPS;
  const burst = s.burst ?? DEFAULT_AZURE_BURST;
  validateBucket({ qps, burst });
  const readQps = s.readQps ?? DEFAULT_AZURE_READ_QPS;
  const readBurst = s.readBurst ?? DEFAULT_AZURE_READ_BURST;
  validateBucket({ qps: readQps, burst: readBurst }, '--azure-read');
  return { ...s, endpoint, qps, burst, readQps, readBurst };
}

function checkPodSubnetId(id: string, subscriptionId: string): void {
  let subnet;
  try {
    subnet = parseSubnetId(id);
  } catch (err) {
    throw new Error(`--pod-subnet-id: ${(err as Error).message}`);
  }
  if (subnet.subscriptionId.toLowerCase() !== subscriptionId.toLowerCase()) {
    throw new Error(
      `--pod-subnet-id is in subscription ${subnet.subscriptionId}, not in --azure-subscription-id ${subscriptionId}`,
    );
  }
}
