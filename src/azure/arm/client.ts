// The real @azure/arm-network client (and @azure/arm-compute's, for Uniform
// scale sets), with our policies in its pipeline in place of the SDK's retry
// and bearer-token ones (see policies.ts). Each client gets its own budget:
// each resource provider throttles on its own. The SDK's
// own bearer policy refuses non-TLS URLs; ours sends the token anywhere it is
// told to, so the endpoint is checked here (endpoint.ts: http only to loopback).
import { ComputeManagementClient } from '@azure/arm-compute';
import { NetworkManagementClient } from '@azure/arm-network';
import type { Pipeline } from '@azure/core-rest-pipeline';
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import type { ArmMetricsSink } from '../metrics.ts';
import { noArmMetrics } from '../metrics.ts';
import type { BearerTokenSource } from './credentials.ts';
import type { RetryOptions } from './policies.ts';
import {
  bearerPolicy,
  DEFAULT_RETRY,
  metricsPolicy,
  operationPacingPolicy,
  retryPolicy,
  tokenBucketPolicy,
} from './policies.ts';
import { ArmBudget } from './budget.ts';
import { TokenBucket } from './token-bucket.ts';
import { monotonicClock, type Clock } from '../../clock/clock.ts';

import { checkEndpoint } from './endpoint.ts';

export { checkEndpoint, DEFAULT_ARM_ENDPOINT } from './endpoint.ts';

export interface ArmClientOptions {
  endpoint: string;
  subscriptionId: string;
  tokens: BearerTokenSource;
  /** Reads and writes apart (a single TokenBucket: one budget for both). */
  bucket: ArmBudget | TokenBucket;
  metrics?: ArmMetricsSink;
  retry?: Partial<RetryOptions>;
  clock?: Pick<Clock, 'now' | 'sleep'>;
  random?: () => number;
}

/** The SDK wants a TokenCredential; ours are applied by bearerPolicy, so this one is never asked. */
const unusedCredential: TokenCredential = {
  getToken: (): Promise<AccessToken | null> =>
    Promise.reject(new Error('the SDK bearer policy should have been removed')),
};

export function createArmClient(options: ArmClientOptions): NetworkManagementClient {
  const endpoint = checkEndpoint(options.endpoint);
  const client = new NetworkManagementClient(unusedCredential, options.subscriptionId, {
    endpoint,
    allowInsecureConnection: endpoint.startsWith('http:'),
    userAgentOptions: { userAgentPrefix: 'ipam-pool-monitor' },
  });
  installArmPolicies(client.pipeline, options);
  return client;
}

/** The Compute client (scale-set VMs), with the same policies and a budget of its own. */
export function createComputeClient(options: ArmClientOptions): ComputeManagementClient {
  const endpoint = checkEndpoint(options.endpoint);
  const client = new ComputeManagementClient(unusedCredential, options.subscriptionId, {
    endpoint,
    allowInsecureConnection: endpoint.startsWith('http:'),
    userAgentOptions: { userAgentPrefix: 'ipam-pool-monitor' },
  });
  installArmPolicies(client.pipeline, options);
  return client;
}

function installArmPolicies(pipeline: Pipeline, options: ArmClientOptions): void {
  const metrics = options.metrics ?? noArmMetrics;
  const clock = options.clock ?? monotonicClock;
  const budget =
    options.bucket instanceof TokenBucket ? ArmBudget.single(options.bucket) : options.bucket;
  pipeline.removePolicy({ name: 'bearerTokenAuthenticationPolicy' });
  pipeline.removePolicy({ phase: 'Retry' });
  pipeline.addPolicy(
    retryPolicy({ ...DEFAULT_RETRY, ...options.retry }, budget, metrics, clock, options.random),
    { phase: 'Retry' },
  );
  pipeline.addPolicy(bearerPolicy(options.tokens), { phase: 'Sign' });
  pipeline.addPolicy(operationPacingPolicy(clock), {
    phase: 'Sign',
    beforePolicies: ['armBearerPolicy'],
  });
  pipeline.addPolicy(tokenBucketPolicy(budget, metrics), { afterPhase: 'Sign' });
  pipeline.addPolicy(
    metricsPolicy(metrics, () => performance.now()),
    {
      afterPhase: 'Sign',
      afterPolicies: ['armTokenBucketPolicy'],
    },
  );
}
