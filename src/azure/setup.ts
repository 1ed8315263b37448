// Builds the Azure backend from its settings (the fulfiller's --azure-*
// flags): token source, token bucket, the SDK client with our policies, the
// NIC adapter, metrics. Bad settings fail here with one-line errors before
// any ARM call.
import type { Registry } from 'prom-client';
import { createArmClient, checkEndpoint, DEFAULT_ARM_ENDPOINT } from './arm/client.ts';
import type { BearerTokenSource } from './arm/credentials.ts';
import { defaultCredentialSource, TokenFileSource } from './arm/credentials.ts';
import { parseSubnetId } from './arm/ids.ts';
import type { RetryOptions } from './arm/policies.ts';
import { TokenBucket, validateBucket } from './arm/token-bucket.ts';
import { AzureBackend } from './backend.ts';
import type { AzureBackendOptions } from './backend.ts';
import { ArmMetrics } from './metrics.ts';
import type { ArmMetricsSink } from './metrics.ts';
import { sdkNicApi } from './nic-api.ts';

export interface AzureSettings {
  subscriptionId: string;
  /** The resource group holding the nodes' NICs. */
  resourceGroup: string;
  /** Full ARM id of the pod subnet. */
  podSubnetId: string;
  endpoint?: string;
  /** Bearer token file; absent: DefaultAzureCredential. */
  tokenFile?: string;
  qps?: number;
  burst?: number;
}

export const DEFAULT_AZURE_QPS = 4;
export const DEFAULT_AZURE_BURST = 20;

const SUBSCRIPTION = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RESOURCE_GROUP = /^[-\w.()]{1,90}$/u;

/** Validates settings; throws a one-line error naming the flag. */
export function validateAzureSettings(s: AzureSettings): Required<
  Omit<AzureSettings, 'tokenFile'>
> & {
  tokenFile?: string;
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
  let subnet;
  try {
    subnet = parseSubnetId(s.podSubnetId ?? '');
  } catch (err) {
    throw new Error(`--pod-subnet-id: ${(err as Error).message}`);
  }
  if (subnet.subscriptionId.toLowerCase() !== s.subscriptionId.toLowerCase()) {
    throw new Error(
      `--pod-subnet-id is in subscription ${subnet.subscriptionId}, not in --azure-subscription-id ${s.subscriptionId}`,
    );
  }
  let endpoint: string;
  try {
    endpoint = checkEndpoint(s.endpoint ?? DEFAULT_ARM_ENDPOINT);
  } catch (err) {
    throw new Error(`--azure-endpoint: ${(err as Error).message}`);
  }
  const qps = s.qps ?? DEFAULT_AZURE_QPS;
  const burst = s.burst ?? DEFAULT_AZURE_BURST;
  validateBucket({ qps, burst });
  return { ...s, endpoint, qps, burst };
}

export interface AzureBackendBuild {
  backend: AzureBackend;
  bucket: TokenBucket;
  tokens: BearerTokenSource;
}

export async function createAzureBackend(
  settings: AzureSettings,
  extra: {
    registry?: Registry;
    metrics?: ArmMetricsSink;
    tokens?: BearerTokenSource;
    retry?: Partial<RetryOptions>;
    backend?: Partial<Omit<AzureBackendOptions, 'api' | 'podSubnetId' | 'metrics'>>;
  } = {},
): Promise<AzureBackendBuild> {
  const s = validateAzureSettings(settings);
  const tokens =
    extra.tokens ??
    (s.tokenFile !== undefined
      ? new TokenFileSource(s.tokenFile)
      : await defaultCredentialSource(s.endpoint));
  const metrics = extra.metrics ?? (extra.registry ? new ArmMetrics(extra.registry) : undefined);
  const bucket = new TokenBucket({ qps: s.qps, burst: s.burst });
  const client = createArmClient({
    endpoint: s.endpoint,
    subscriptionId: s.subscriptionId,
    tokens,
    bucket,
    ...(metrics ? { metrics } : {}),
    ...(extra.retry ? { retry: extra.retry } : {}),
  });
  const api = sdkNicApi(client, s.resourceGroup, parseSubnetId(s.podSubnetId));
  const backend = new AzureBackend({
    ...extra.backend,
    api,
    podSubnetId: s.podSubnetId,
    ...(metrics ? { metrics } : {}),
  });
  return { backend, bucket, tokens };
}
