// The Azure backend's Prometheus series, registered on the registry the
// process's collector owns (the fulfiller's /metrics): ARM calls by
// operation and status code, their duration, throttled waits (the token
// bucket, Retry-After), and addresses allocated and released on NICs.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ArmOperation } from './arm/operations.ts';

export type ThrottleCause =
  'token-bucket' | 'retry-after' | 'backoff' | 'quota-low' | 'resource-busy';

/** What the ARM client and the backend report; `noArmMetrics` drops it all. */
export interface ArmMetricsSink {
  /** One HTTP attempt; `code` is the status code, or `error` when no answer came. */
  call(operation: ArmOperation, code: string, seconds: number): void;
  throttledWait(cause: ThrottleCause, ms: number): void;
  allocated(count: number): void;
  released(count: number): void;
  /** A node's NIC, its VM or the virtual network cannot take more addresses. */
  limitReached(limit: ArmLimit): void;
  /** ARM answered 403 to a call (the identity lacks a role assignment). */
  forbidden(operation: string): void;
  /** Pod ipConfigurations another writer removed: put back with their address, or lost. */
  removedByOthers?(outcome: 'restored' | 'lost', count: number): void;
  /**
   * Addresses NNC statuses list that their NICs, as last listed, lack now
   * (removed by another writer, not yet restored or reported lost): while
   * listed, no other node's status may take them.
   */
  ipConfigsMissing?(count: number): void;
  /** The upgrade modes of the Uniform scale sets in use, one entry per scale set. */
  scaleSetModes?(modes: string[]): void;
}

export type ArmLimit = 'nic' | 'vm' | 'vnet' | 'ipv6';

export const noArmMetrics: ArmMetricsSink = {
  call: () => {},
  throttledWait: () => {},
  allocated: () => {},
  released: () => {},
  limitReached: () => {},
  forbidden: () => {},
};

/** ARM latency buckets in seconds: a read takes tens of ms, a throttled call seconds. */
export const ARM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class ArmMetrics implements ArmMetricsSink {
  private readonly calls: Counter<'operation' | 'code'>;
  private readonly duration: Histogram<'operation'>;
  private readonly waits: Counter<'cause'>;
  private readonly waitSeconds: Counter<'cause'>;
  private readonly allocations: Counter;
  private readonly releases: Counter;
  private readonly limits: Counter<'limit'>;
  private readonly forbids: Counter<'operation'>;
  private readonly removed: Counter<'outcome'>;
  private readonly missing: Gauge;
  private readonly scaleSets: Gauge<'upgrade_mode'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.calls = new Counter({
      name: 'pool_monitor_arm_requests_total',
      help: 'ARM HTTP requests (every attempt, polls included) by operation and status code.',
      labelNames: ['operation', 'code'],
      registers,
    });
    this.duration = new Histogram({
      name: 'pool_monitor_arm_request_duration_seconds',
      help: 'Duration of ARM HTTP requests by operation.',
      labelNames: ['operation'],
      buckets: ARM_BUCKETS,
      registers,
    });
    this.waits = new Counter({
      name: 'pool_monitor_arm_throttled_waits_total',
      help: "ARM calls held back: by the token bucket, by a Retry-After, by 5xx backoff, by low remaining quota, by a 429 for one busy resource (that resource's writes only).",
      labelNames: ['cause'],
      registers,
    });
    this.waitSeconds = new Counter({
      name: 'pool_monitor_arm_throttled_wait_seconds_total',
      help: 'Time ARM calls spent held back, by cause.',
      labelNames: ['cause'],
      registers,
    });
    this.allocations = new Counter({
      name: 'pool_monitor_arm_ips_allocated_total',
      help: 'Secondary IP configurations added to NICs (addresses allocated).',
      registers,
    });
    this.releases = new Counter({
      name: 'pool_monitor_arm_ips_released_total',
      help: 'Secondary IP configurations removed from NICs (addresses released).',
      registers,
    });
    this.limits = new Counter({
      name: 'pool_monitor_arm_limit_reached_total',
      help: "Rounds that could not add addresses because of Azure's caps: per NIC, per VM, per virtual network, IPv6 per NIC.",
      labelNames: ['limit'],
      registers,
    });
    this.forbids = new Counter({
      name: 'pool_monitor_arm_forbidden_total',
      help: 'ARM calls answered 403 (a missing role assignment), by operation.',
      labelNames: ['operation'],
      registers,
    });
    this.removed = new Counter({
      name: 'pool_monitor_arm_ipconfigs_removed_by_others_total',
      help: 'Pod ipConfigurations another writer removed from a NIC while its NNC listed them: restored (same name and address) or lost (the address was taken).',
      labelNames: ['outcome'],
      registers,
    });
    this.missing = new Gauge({
      name: 'pool_monitor_arm_ipconfigs_missing',
      help: 'Addresses NodeNetworkConfig statuses list that their NICs, as last listed, lack now (removed by another writer, not yet restored or reported lost); no other node can be given them meanwhile.',
      registers,
    });
    this.scaleSets = new Gauge({
      name: 'pool_monitor_arm_scale_sets',
      help: 'Uniform scale sets whose instances are nodes, by upgradePolicy.mode: the nodes of any but Manual are refused pod addresses (an upgrade to the latest model would remove them under running pods).',
      labelNames: ['upgrade_mode'],
      registers,
    });
    for (const outcome of ['restored', 'lost'] as const) this.removed.inc({ outcome }, 0);
    for (const limit of ['nic', 'vm', 'vnet', 'ipv6'] as const) this.limits.inc({ limit }, 0);
    for (const cause of [
      'token-bucket',
      'retry-after',
      'backoff',
      'quota-low',
      'resource-busy',
    ] as const) {
      this.waits.inc({ cause }, 0);
      this.waitSeconds.inc({ cause }, 0);
    }
  }

  call(operation: ArmOperation, code: string, seconds: number): void {
    this.calls.inc({ operation, code });
    this.duration.observe({ operation }, seconds);
  }

  throttledWait(cause: ThrottleCause, ms: number): void {
    this.waits.inc({ cause });
    this.waitSeconds.inc({ cause }, ms / 1000);
  }

  allocated(count: number): void {
    if (count > 0) this.allocations.inc(count);
  }

  released(count: number): void {
    if (count > 0) this.releases.inc(count);
  }

  limitReached(limit: ArmLimit): void {
    this.limits.inc({ limit });
  }

  forbidden(operation: string): void {
    this.forbids.inc({ operation });
  }

  removedByOthers(outcome: 'restored' | 'lost', count: number): void {
    if (count > 0) this.removed.inc({ outcome }, count);
  }

  ipConfigsMissing(count: number): void {
    this.missing.set(count);
  }

  scaleSetModes(modes: string[]): void {
    this.scaleSets.reset();
    for (const mode of modes) this.scaleSets.inc({ upgrade_mode: mode });
  }
}
