// Builds the Azure backend from its settings (the fulfiller's --azure-*
// flags): token source, token bucket, the SDK client with our policies, the
// NIC adapter, metrics. Bad settings fail here with one-line errors before
// any ARM call.
import type { Registry } from 'prom-client';
import type { BackendFactory } from '../fulfiller/backend.ts';
import { createArmClient, createComputeClient } from './arm/client.ts';
import type { BearerTokenSource } from './arm/credentials.ts';
import { defaultCredentialSource, TokenFileSource } from './arm/credentials.ts';
import type { RetryOptions } from './arm/policies.ts';
import { ArmBudget } from './arm/budget.ts';
import { AzureBackend } from './backend.ts';
import type { AzureBackendOptions } from './backend.ts';
import { ArmMetrics } from './metrics.ts';
import type { ArmMetricsSink } from './metrics.ts';
import { sdkNicApi } from './nic-api.ts';
import type { AzureSettings } from './settings.ts';
import { validateAzureSettings } from './settings.ts';

export type { AzureSettings } from './settings.ts';

export interface AzureBackendBuild {
  backend: AzureBackend;
  /** Microsoft.Network's read and write buckets. */
  budget: ArmBudget;
  /** Microsoft.Compute's (Uniform scale-set VMs), as many again: it throttles on its own. */
  computeBudget: ArmBudget;
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
  const budgets = {
    reads: { qps: s.readQps, burst: s.readBurst },
    writes: { qps: s.qps, burst: s.burst },
  };
  const budget = new ArmBudget(budgets);
  const computeBudget = new ArmBudget(budgets);
  const common = {
    endpoint: s.endpoint,
    subscriptionId: s.subscriptionId,
    tokens,
    ...(metrics ? { metrics } : {}),
    ...(extra.retry ? { retry: extra.retry } : {}),
  };
  const client = createArmClient({ ...common, bucket: budget });
  const compute = createComputeClient({ ...common, bucket: computeBudget });
  const api = sdkNicApi(client, s.resourceGroup, undefined, compute);
  const backend = new AzureBackend({
    ...extra.backend,
    api,
    ...(s.podSubnetId ? { podSubnetId: s.podSubnetId } : {}),
    ...(metrics ? { metrics } : {}),
  });
  return { backend, budget, computeBudget, tokens };
}

export type AzureBuildExtra = Parameters<typeof createAzureBackend>[1];

/**
 * The fulfiller's backend for these settings: the ARM series on the
 * fulfiller's /metrics registry, background failures in its log.
 */
export function azureBackendFactory(
  settings: AzureSettings,
  extra: Omit<NonNullable<AzureBuildExtra>, 'registry' | 'metrics'> = {},
): BackendFactory {
  return async (context) =>
    (
      await createAzureBackend(settings, {
        ...extra,
        registry: context.registry,
        backend: { ...extra.backend, logger: context.logger },
      })
    ).backend;
}
