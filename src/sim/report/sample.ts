// Turning cluster snapshots into the report's inputs: one timeline sample
// (demand, requested, allocated, summed over nodes) per snapshot, and IP
// churn counted exactly by following each node's set of IPs from snapshot to
// snapshot (a sampled total would hide an IP released and another allocated
// between two samples only if they fall between the same snapshots).
import { poolSize } from '../../nnc/family.ts';
import { dynamicContainers, type NodeNetworkConfig } from '../../nnc/types.ts';
import { holdsIps, type PodSnapshot } from '../invariants.ts';
import type { Sample } from '../summary.ts';

/** Demand as the monitor counts it: pods on a node, not host-network, not finished. */
export function demandOf(pods: readonly PodSnapshot[]): number {
  let n = 0;
  for (const p of pods) if (holdsIps(p)) n += 1;
  return n;
}

/** IPs the NNC status backs in its dynamic network containers. */
export function allocatedIps(nnc: NodeNetworkConfig): string[] {
  return dynamicContainers(nnc).flatMap((nc) => (nc.ipAssignments ?? []).map((a) => a.ip));
}

/** One timeline sample over all nodes at `tSeconds` (allocated: the pool in pods, src/nnc/family.ts). */
export function clusterSample(
  tSeconds: number,
  pods: readonly PodSnapshot[],
  nncs: readonly NodeNetworkConfig[],
): Sample {
  let requested = 0;
  let allocated = 0;
  for (const nnc of nncs) {
    requested += Math.max(0, nnc.spec?.requestedIPCount ?? 0);
    // In pods, as the monitor counts it: a dual-stack pod takes one address of each family.
    allocated += poolSize(nnc);
  }
  return { t: tSeconds, demand: demandOf(pods), requested, allocated };
}

/** Counts IPs that appear in and leave NNC statuses across snapshots. */
export class IpChurnTracker {
  allocated = 0;
  released = 0;
  private readonly seen = new Map<string, Set<string>>();

  /** Feeds one snapshot of every NNC; a node missing from it released all its IPs. */
  observe(nncs: readonly NodeNetworkConfig[]): void {
    const present = new Set<string>();
    for (const nnc of nncs) {
      const node = nnc.metadata.name;
      present.add(node);
      const now = new Set(allocatedIps(nnc));
      const before = this.seen.get(node) ?? new Set<string>();
      for (const ip of now) if (!before.has(ip)) this.allocated += 1;
      for (const ip of before) if (!now.has(ip)) this.released += 1;
      this.seen.set(node, now);
    }
    for (const [node, ips] of this.seen) {
      if (!present.has(node)) {
        this.released += ips.size;
        this.seen.delete(node);
      }
    }
  }

  totals(): { allocated: number; released: number } {
    return { allocated: this.allocated, released: this.released };
  }
}
