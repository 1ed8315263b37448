// What the Azure backend did, counted twice: in `AzureBackendStats` (tests and
// the embedded report read it) and in the ARM metrics sink (metrics.ts).
import type { ArmLimit, ArmMetricsSink } from './metrics.ts';
import type { PodSubnet } from './pod-subnet.ts';

/** Counters of what the backend did, for tests and the embedded report. */
export interface AzureBackendStats {
  puts: number;
  preconditionFailed: number;
  subnetFull: number;
  allocated: number;
  released: number;
  /** ipConfigurations another writer removed that were put back with their address. */
  restored: number;
  /** ...that could not be (their address taken, or a scale-set instance). */
  lost: number;
  /** Our operations ARM canceled, superseded by a later one: the NIC read again. */
  superseded: number;
}

export class BackendCounters {
  readonly stats: AzureBackendStats = {
    puts: 0,
    preconditionFailed: 0,
    subnetFull: 0,
    allocated: 0,
    released: 0,
    restored: 0,
    lost: 0,
    superseded: 0,
  };
  private readonly metrics: ArmMetricsSink;

  constructor(metrics: ArmMetricsSink) {
    this.metrics = metrics;
  }

  put(): void {
    this.stats.puts++;
  }

  preconditionFailed(): void {
    this.stats.preconditionFailed++;
  }

  superseded(): void {
    this.stats.superseded++;
  }

  subnetFull(): void {
    this.stats.subnetFull++;
  }

  limitReached(limit: ArmLimit): void {
    this.metrics.limitReached(limit);
  }

  /** Addresses a write took and freed, also told to their subnet's usage. */
  count(pod: PodSubnet, taken: number, freed: number): void {
    this.stats.allocated += taken;
    this.stats.released += freed;
    this.metrics.allocated(taken);
    this.metrics.released(freed);
    pod.record(taken, freed);
  }

  /** The upgrade modes of the Uniform scale sets read so far, one entry each. */
  scaleSetModes(modes: string[]): void {
    this.metrics.scaleSetModes?.(modes);
  }

  /** Addresses listed in statuses that their NICs lack now, all nodes together. */
  missing(count: number): void {
    this.metrics.ipConfigsMissing?.(count);
  }

  /** Another writer's removals: put back with their address, or lost. */
  removedByOthers(restored: number, lost: number): void {
    this.stats.restored += restored;
    this.stats.lost += lost;
    this.metrics.removedByOthers?.('restored', restored);
    this.metrics.removedByOthers?.('lost', lost);
  }
}
