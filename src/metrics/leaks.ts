// The counters of "the store follows the pods", registered in the sidecar's
// own registry (MetricsCollector.registry): leaked IPs reclaimed by reason,
// addresses adopted from the pods' status, and conflicts seen.
import { Counter, type Registry } from 'prom-client';

/** Reclaim reasons, pre-created at 0 so the series exist from the first scrape. */
export const RECLAIM_REASONS = ['pod-deleted', 'pod-completed', 'sandbox-recreated'] as const;
export type ReclaimReason = (typeof RECLAIM_REASONS)[number];

export class LeakMetrics {
  readonly #reclaimed: Counter<'reason'>;
  readonly #adopted: Counter;
  readonly #conflicts: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#reclaimed = new Counter({
      name: 'pool_monitor_leaked_ips_reclaimed_total',
      help: 'Assigned IPs released because their pod or sandbox was gone, by reason.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of RECLAIM_REASONS) this.#reclaimed.inc({ reason }, 0);
    this.#adopted = new Counter({
      name: 'pool_monitor_ips_adopted_total',
      help: 'Addresses a pod reported in status.podIPs that the IP store did not hold for it, adopted.',
      registers,
    });
    this.#conflicts = new Counter({
      name: 'pool_monitor_pod_ip_conflicts_total',
      help: 'Pod addresses the IP store could not adopt (claimed twice, held by another pod, not in the NNC).',
      registers,
    });
  }

  reclaimed(reason: ReclaimReason): void {
    this.#reclaimed.inc({ reason });
  }

  adopted(): void {
    this.#adopted.inc();
  }

  conflict(): void {
    this.#conflicts.inc();
  }
}
