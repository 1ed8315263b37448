// The fulfiller's configuration: defaults as Azure's control plane uses them
// (batch 16, request threshold 50 %, release threshold 150 %, max 250) and one
// validation function, so the command line and the embedded cluster reject the
// same bad values with the same one-line messages.
import type { ForecastOptions } from './forecast.ts';
import type { ScalerSpec } from '../nnc/types.ts';
import { DEFAULT_NAMESPACE } from '../nnc/types.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { nodeSelector } from './nodes.ts';
import { subnetsByFamily } from './families.ts';

export interface FulfillerConfig {
  namespace: string;
  /** Pod subnet of the CIDR backend (the first of `subnets`). */
  subnet: string;
  /**
   * Every pod subnet of the CIDR backend, at most one per address family,
   * IPv4 first (`--subnet` given once or twice; docs/design/contracts.md,
   * "Address families"). Absent: `subnet` alone.
   */
  subnets?: string[];
  /** Subnet / CSS name; derived from the CIDR when absent. */
  subnetName?: string;
  /** Written to every NNC's `status.scaler`. */
  scaler: Required<ScalerSpec>;
  /** Exhausted when fewer addresses than this are free. */
  exhaustionThreshold: number;
  /** Recovered once this many more than the threshold are free again. */
  recoveryMargin: number;
  /**
   * A subnet published as exhausted stays so at least this long (ms). When
   * nodes shrink to batch 1 they free addresses at once, which would otherwise
   * flip the state back within milliseconds and make every node oscillate.
   */
  exhaustionHoldMs: number;
  /** Nodes served in parallel. */
  workers: number;
  /** Every NNC is looked at again this often, in ms. */
  resyncMs: number;
  /** Minimum time between two actions on the same node, in ms. */
  minIntervalMs: number;
  /** Delays after a failed action on a node. */
  backoff: BackoffOptions;
  /** Attempts of one status write on 409 Conflict before backing off. */
  conflictRetries: number;
  /** Label selector of the Nodes that get an NNC (default: every Node). */
  nodeSelector?: string;
  /** The subnets' exhaustion forecast on /metrics (default: 10 min window, 1 min of history first). */
  forecast?: ForecastOptions;
  /**
   * How long a deleted Node's addresses stay quarantined, in ms (quarantine.ts):
   * longer than the pod GC's 40 s plus a pod's termination grace period (30 s).
   */
  quarantineMs: number;
  /** How often a quarantined node's pods are looked for, in ms (quarantine-pods.ts): none left ends it early. */
  quarantinePodCheckMs: number;
}

export const DEFAULT_SCALER: Required<ScalerSpec> = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

export const DEFAULT_FULFILLER_CONFIG: FulfillerConfig = {
  namespace: DEFAULT_NAMESPACE,
  subnet: '10.240.0.0/16',
  scaler: DEFAULT_SCALER,
  exhaustionThreshold: 16,
  recoveryMargin: 16,
  exhaustionHoldMs: 30_000,
  workers: 8,
  resyncMs: 60_000,
  minIntervalMs: 100,
  backoff: { initialMs: 200, maxMs: 30_000, factor: 2, jitter: 0.2 },
  conflictRetries: 5,
  quarantineMs: 120_000,
  quarantinePodCheckMs: 5_000,
};

function positiveInt(name: string, value: number, min = 1): void {
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got ${value}`);
  }
}

/** Merges overrides onto the defaults and validates; throws a one-line Error. */
export function makeFulfillerConfig(overrides: Partial<FulfillerConfig> = {}): FulfillerConfig {
  const config: FulfillerConfig = {
    ...DEFAULT_FULFILLER_CONFIG,
    ...overrides,
    scaler: { ...DEFAULT_SCALER, ...overrides.scaler },
  };
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(config.namespace)) {
    throw new Error(`invalid namespace "${config.namespace}"`);
  }
  positiveInt('batch size', config.scaler.batchSize);
  positiveInt('request threshold', config.scaler.requestThresholdPercent);
  positiveInt('release threshold', config.scaler.releaseThresholdPercent);
  positiveInt('max IP count', config.scaler.maxIPCount);
  if (config.scaler.maxIPCount > 250)
    throw new Error(`max IP count must be at most 250, got ${config.scaler.maxIPCount}`);
  if (config.scaler.batchSize > config.scaler.maxIPCount) {
    throw new Error(
      `batch size ${config.scaler.batchSize} exceeds max IP count ${config.scaler.maxIPCount}`,
    );
  }
  if (config.scaler.releaseThresholdPercent <= config.scaler.requestThresholdPercent) {
    throw new Error('release threshold must be greater than request threshold');
  }
  positiveInt('exhaustion threshold', config.exhaustionThreshold, 0);
  positiveInt('recovery margin', config.recoveryMargin, 0);
  positiveInt('exhaustion hold', config.exhaustionHoldMs, 0);
  positiveInt('workers', config.workers);
  positiveInt('resync interval', config.resyncMs);
  positiveInt('minimum interval', config.minIntervalMs, 0);
  positiveInt('conflict retries', config.conflictRetries);
  positiveInt('quarantine', config.quarantineMs, 0);
  positiveInt('quarantinePodCheckMs', config.quarantinePodCheckMs);
  if (
    config.subnetName !== undefined &&
    !/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(config.subnetName)
  ) {
    throw new Error(`invalid subnet name "${config.subnetName}": must be a DNS-1123 name`);
  }
  if (config.nodeSelector !== undefined) nodeSelector(config.nodeSelector); // throws on bad syntax
  if (config.subnets !== undefined) {
    // One per family, IPv4 first; `subnet` is the first of them.
    const ordered = subnetsByFamily(config.subnets).map(([, cidr]) => cidr);
    return { ...config, subnets: ordered, subnet: ordered[0]! };
  }
  return config;
}
