// The leaks of an embedded run, carried out: lost stores at the scenario's
// moments (relative to the workload's start), each checked right after its
// rebuild against the pods the API server holds, and the report's leak
// figures gathered from every sidecar (those replaced too), every kubelet's
// dropped DELs and every store's Assigned IPs, before the cluster stops.
// The sidecars run in this process (leaks and --chaos do not combine).
import type { IpRecord } from '../../src/ipstore/types.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { PodSnapshot } from '../../src/sim/invariants.ts';
import type { ScenarioLeaks } from '../workload/leaks.ts';
import type { RunningSidecar } from '../../src/sidecar/run.ts';
import type { EmbeddedCluster } from './cluster.ts';
import type { NodeAgent } from './components.ts';
import {
  checkRebuilt,
  stillLeaked,
  sumLeakCounts,
  type LeakReport,
  type StoreRebuild,
} from './leaks.ts';

export interface LeakRun {
  /** Waits for store losses in progress; cancels those not started. */
  settle(): Promise<void>;
  /** The report's leak figures, now. */
  report(): LeakReport;
}

function inProcess(agent: NodeAgent): RunningSidecar {
  if (!agent.inProcess)
    throw new Error('leaks need the sidecars in this process (not with --chaos)');
  return agent.inProcess;
}

export function startLeakRun(
  cluster: EmbeddedCluster,
  leaks: ScenarioLeaks,
  t0: number,
  logger: Logger,
): LeakRun {
  const log = logger.child({ component: 'embedded' });
  const rebuilds: StoreRebuild[] = [];
  const inFlight = new Set<Promise<void>>();
  const timers: NodeJS.Timeout[] = [];
  const pods = (): PodSnapshot[] => cluster.server.objects('', 'pods') as PodSnapshot[];

  const lose = async (index: number): Promise<void> => {
    const node = cluster.nodes[index];
    if (node === undefined) return;
    const atSeconds = Math.round((Date.now() - t0) / 100) / 10;
    await cluster.loseStore(node.name);
    const sidecar = inProcess(node.sidecar);
    const check = checkRebuilt(node.name, pods(), sidecar.store.list(['Assigned']));
    const rebuild = {
      node: node.name,
      atSeconds,
      ...check,
      adopted: sidecar.leaks.counts.adopted,
    };
    rebuilds.push(rebuild);
    log.info('IP store rebuilt from the pods', { ...rebuild, missing: check.missing.slice(0, 10) });
  };
  for (const step of leaks.storeLosses) {
    const wait = Math.max(0, t0 + step.at * 1000 - Date.now());
    timers.push(
      setTimeout(() => {
        for (const i of step.nodes) {
          const p: Promise<void> = lose(i)
            .catch((err: unknown) => {
              log.error('losing a store failed', { error: String(err) });
            })
            .finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
      }, wait),
    );
  }

  return {
    async settle() {
      for (const t of timers) clearTimeout(t);
      await Promise.all([...inFlight]);
    },
    report() {
      const counts = sumLeakCounts([
        ...cluster.retiredLeakCounts,
        ...cluster.nodes.map((n) => inProcess(n.sidecar).leaks.counts),
      ]);
      const dropped = cluster.nodes.flatMap((n) =>
        (n.kubelet.inProcess?.kubelet.dropped ?? []).map((d) => ({ ...d, node: n.name })),
      );
      const assigned = new Map<string, IpRecord[]>(
        cluster.nodes.map((n) => [n.name, inProcess(n.sidecar).store.list(['Assigned'])]),
      );
      return {
        dropReleaseRate: leaks.dropReleaseRate,
        graceSeconds: leaks.graceSeconds,
        releasesDropped: dropped.length,
        reclaimed: counts.reclaimed,
        stillLeaked: stillLeaked(dropped, assigned, pods()),
        adopted: counts.adopted,
        conflicts: counts.conflicts,
        storeLosses: [...rebuilds],
      };
    },
  };
}
