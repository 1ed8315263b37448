// The real @azure/arm-network client, with our policies in its pipeline in
// place of the SDK's retry and bearer-token ones (see policies.ts). Plain
// http is allowed only to a loopback address (the emulator): the SDK's own
// bearer policy refuses non-TLS URLs, ours sends the token anywhere it is
// told to, so the endpoint check lives here.
import { NetworkManagementClient } from '@azure/arm-network';
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import type { ArmMetricsSink } from '../metrics.ts';
import { noArmMetrics } from '../metrics.ts';
import type { BearerTokenSource } from './credentials.ts';
import type { PolicyClock, RetryOptions } from './policies.ts';
import {
  bearerPolicy,
  DEFAULT_RETRY,
  metricsPolicy,
  retryPolicy,
  tokenBucketPolicy,
} from './policies.ts';
import type { TokenBucket } from './token-bucket.ts';
import { realBucketClock } from './token-bucket.ts';

export const DEFAULT_ARM_ENDPOINT = 'https://management.azure.com';

export interface ArmClientOptions {
  endpoint: string;
  subscriptionId: string;
  tokens: BearerTokenSource;
  bucket: TokenBucket;
  metrics?: ArmMetricsSink;
  retry?: Partial<RetryOptions>;
  clock?: PolicyClock;
  random?: () => number;
}

/** Checks an endpoint: https anywhere, http only to loopback. Returns it without a trailing slash. */
export function checkEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`invalid ARM endpoint "${endpoint}"`);
  }
  if (url.protocol === 'http:') {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') {
      throw new Error(
        `ARM endpoint "${endpoint}": plain http is allowed only to a loopback address (an emulator)`,
      );
    }
  } else if (url.protocol !== 'https:') {
    throw new Error(`ARM endpoint "${endpoint}" must be https:// (or http:// to loopback)`);
  }
  if (url.pathname !== '/' || url.search !== '') {
    throw new Error(`ARM endpoint "${endpoint}" must be an origin, e.g. ${DEFAULT_ARM_ENDPOINT}`);
  }
  return url.origin;
}

/** The SDK wants a TokenCredential; ours are applied by bearerPolicy, so this one is never asked. */
const unusedCredential: TokenCredential = {
  getToken: (): Promise<AccessToken | null> =>
    Promise.reject(new Error('the SDK bearer policy should have been removed')),
};

export function createArmClient(options: ArmClientOptions): NetworkManagementClient {
  const endpoint = checkEndpoint(options.endpoint);
  const metrics = options.metrics ?? noArmMetrics;
  const clock = options.clock ?? realBucketClock;
  const client = new NetworkManagementClient(unusedCredential, options.subscriptionId, {
    endpoint,
    allowInsecureConnection: endpoint.startsWith('http:'),
    userAgentOptions: { userAgentPrefix: 'ipam-pool-monitor' },
  });
  const pipeline = client.pipeline;
  pipeline.removePolicy({ name: 'bearerTokenAuthenticationPolicy' });
  pipeline.removePolicy({ phase: 'Retry' });
  pipeline.addPolicy(
    retryPolicy(
      { ...DEFAULT_RETRY, ...options.retry },
      options.bucket,
      metrics,
      clock,
      options.random,
    ),
    { phase: 'Retry' },
  );
  pipeline.addPolicy(bearerPolicy(options.tokens), { phase: 'Sign' });
  pipeline.addPolicy(tokenBucketPolicy(options.bucket, metrics), { afterPhase: 'Sign' });
  pipeline.addPolicy(
    metricsPolicy(metrics, () => performance.now()),
    {
      afterPhase: 'Sign',
      afterPolicies: ['armTokenBucketPolicy'],
    },
  );
  return client;
}
