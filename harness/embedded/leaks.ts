// The embedded run's leaks, as the report shows them: CNI DELs the simulated
// kubelets dropped, leaked IPs the sidecars reclaimed (by reason), what is
// still leaked at the end, and for every lost store whether each running
// pod's address was adopted by the rebuilt one. Pure: the run gathers the
// stores' records, the API server's pods and the kubelets' drops.
import type { IpRecord } from '../../src/ipstore/types.ts';
import type { ReclaimReason } from '../../src/metrics/leaks.ts';
import type { LeakCounts } from '../../src/sidecar/leaks.ts';
import { holdsIps, podIps, type PodSnapshot } from '../../src/sim/invariants.ts';
import type { DroppedRelease } from '../kubelet/kubelet.ts';
import { DEFAULT_SCENARIO_LEAK_GRACE_SECONDS, type ScenarioLeaks } from '../workload/leaks.ts';

/** One lost store and what the rebuilt one holds. */
export interface StoreRebuild {
  node: string;
  atSeconds: number;
  /** Pods running on the node with an address in their status, when it was rebuilt. */
  runningPods: number;
  /** Their addresses. */
  addresses: number;
  /** Of these, those the rebuilt store holds for them. */
  held: number;
  /** `namespace/name ip` of every address it does not. */
  missing: string[];
  /** Addresses the new sidecar adopted while rebuilding. */
  adopted: number;
}

export interface LeakReport {
  dropReleaseRate: number;
  graceSeconds: number;
  /** CNI DELs the kubelets dropped. */
  releasesDropped: number;
  /** Leaked IPs the sidecars released, by reason. */
  reclaimed: Record<ReclaimReason, number>;
  /** Dropped DELs whose IP a store still holds for their pod at the end. */
  stillLeaked: number;
  adopted: number;
  conflicts: number;
  storeLosses: StoreRebuild[];
}

/** The run's leaks: the scenario's, with --leak-rate over its drop rate; none when neither asks. */
export function runLeaks(
  scenario: ScenarioLeaks | undefined,
  leakRate: number | undefined,
): ScenarioLeaks | undefined {
  const rate = leakRate ?? scenario?.dropReleaseRate ?? 0;
  const storeLosses = scenario?.storeLosses ?? [];
  if (rate === 0 && storeLosses.length === 0 && scenario === undefined) return undefined;
  return {
    dropReleaseRate: rate,
    graceSeconds: scenario?.graceSeconds ?? DEFAULT_SCENARIO_LEAK_GRACE_SECONDS,
    storeLosses,
  };
}

export function sumLeakCounts(all: readonly LeakCounts[]): LeakCounts {
  const sum: LeakCounts = {
    reclaimed: { 'pod-deleted': 0, 'pod-completed': 0, 'sandbox-recreated': 0 },
    adopted: 0,
    conflicts: 0,
  };
  for (const c of all) {
    for (const [reason, n] of Object.entries(c.reclaimed) as [ReclaimReason, number][]) {
      sum.reclaimed[reason] += n;
    }
    sum.adopted += c.adopted;
    sum.conflicts += c.conflicts;
  }
  return sum;
}

const keyOf = (namespace: string | undefined, name: string | undefined): string =>
  `${namespace ?? 'default'}/${name ?? '?'}`;

/** The node's running pods' addresses against what its store holds Assigned. */
export function checkRebuilt(
  node: string,
  pods: readonly PodSnapshot[],
  assigned: readonly IpRecord[],
): Pick<StoreRebuild, 'runningPods' | 'addresses' | 'held' | 'missing'> {
  const holder = new Map(
    assigned.map((r) => [r.ip, r.pod ? keyOf(r.pod.podNamespace, r.pod.podName) : '']),
  );
  let runningPods = 0;
  let addresses = 0;
  let held = 0;
  const missing: string[] = [];
  for (const pod of pods) {
    if (pod.spec?.nodeName !== node || !holdsIps(pod)) continue;
    const ips = podIps(pod);
    if (ips.length === 0) continue;
    runningPods += 1;
    const key = keyOf(pod.metadata?.namespace, pod.metadata?.name);
    for (const ip of ips) {
      addresses += 1;
      if (holder.get(ip) === key) held += 1;
      else missing.push(`${key} ${ip}`);
    }
  }
  return { runningPods, addresses, held, missing };
}

/**
 * Dropped DELs whose IP the node's store still holds Assigned to their pod,
 * while that pod is not live on the node (a live pod of the same name holds
 * its own IP). `assignedByNode` is every store's Assigned records.
 */
export function stillLeaked(
  dropped: readonly (DroppedRelease & { node: string })[],
  assignedByNode: ReadonlyMap<string, readonly IpRecord[]>,
  pods: readonly PodSnapshot[],
): number {
  const live = new Set(
    pods
      .filter((p) => holdsIps(p))
      .map((p) => `${p.spec?.nodeName}|${keyOf(p.metadata?.namespace, p.metadata?.name)}`),
  );
  let n = 0;
  for (const d of dropped) {
    const key = keyOf(d.namespace, d.name);
    if (live.has(`${d.node}|${key}`)) continue;
    const records = assignedByNode.get(d.node) ?? [];
    if (
      records.some(
        (r) =>
          d.ips.includes(r.ip) &&
          r.pod !== undefined &&
          keyOf(r.pod.podNamespace, r.pod.podName) === key,
      )
    )
      n += 1;
  }
  return n;
}

/** The report's lines about leaks. */
export function leakLines(r: LeakReport): string[] {
  const byReason = Object.entries(r.reclaimed)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
  const total = Object.values(r.reclaimed).reduce((a, b) => a + b, 0);
  const lines = [
    `  leaked IPs                   ${r.releasesDropped} CNI DELs dropped (rate ${r.dropReleaseRate}), ${total} reclaimed after a ${r.graceSeconds} s grace (${byReason}), ${r.stillLeaked} still leaked`,
  ];
  const lost = r.storeLosses;
  if (lost.length > 0) {
    const rebuilt = lost.filter((l) => l.missing.length === 0).length;
    const addresses = lost.reduce((a, l) => a + l.addresses, 0);
    const running = lost.reduce((a, l) => a + l.runningPods, 0);
    const held = lost.reduce((a, l) => a + l.held, 0);
    lines.push(
      `  lost stores                  ${lost.length} lost, ${rebuilt} rebuilt from the pods (${held} of the ${addresses} addresses of ${running} running pods held again; ${r.adopted} adoptions, ${r.conflicts} conflicts)`,
    );
  }
  return lines;
}
