// `embedded --chaos RATE --seed N`, as the embedded run uses it: the
// component host (every sidecar and two fulfillers as processes), the plan
// drawn from the seed, the harness started once the cluster is up, and the
// report's `chaos` section with what it did and whether the product held.
import { writePrivateFile } from '../../../src/secrets/private-file.ts';
import { join } from 'node:path';
import type { ApiServer } from '../../apiserver/server.ts';
import type { LogLevel } from '../../../src/log/levels.ts';
import type { Logger } from '../../../src/log/logger.ts';
import { DEFAULT_NAMESPACE } from '../../../src/nnc/types.ts';
import { ChaosHarness, type ChaosSummary } from './harness.ts';
import { ChaosHost } from './host.ts';
import { planChaos, type ChaosAction } from './plan.ts';

export type { ChaosSummary } from './harness.ts';

export interface ChaosOptions {
  /** Share of API writes that fail, 0..1; also how often components are killed. */
  rate: number;
  seed: number;
}

/** Nodes a chaos run takes at most: each sidecar is a process of its own (~150 MiB). */
export const MAX_CHAOS_NODES = 32;

export interface ChaosRun {
  host: ChaosHost;
  plan: ChaosAction[];
  /** Starts the faults and the plan's clock (call once the cluster is up). */
  start(server: ApiServer): void;
  /** Ends the chaos; waits for restarts in progress. */
  stop(): Promise<void>;
  summary(): ChaosSummary | undefined;
}

export function prepareChaos(args: {
  chaos: ChaosOptions;
  nodeNames: readonly string[];
  durationMs: number;
  runDir: string;
  logFile: string;
  logLevel: LogLevel;
  logger: Logger;
}): ChaosRun {
  const { chaos } = args;
  const plan = planChaos({
    seed: chaos.seed,
    rate: chaos.rate,
    durationMs: args.durationMs,
    nodes: args.nodeNames,
    nodeDeletions: process.env.CHAOS_NODE_DELETIONS !== '0',
  });
  let harness: ChaosHarness | undefined;
  const host = new ChaosHost({
    // Each component's own identity, as the manifests grant it (the run dir is the run's own).
    kubeconfigFor: (component, kc) => {
      const file = join(args.runDir, `kubeconfig-${component}`);
      writePrivateFile(file, kc.exportConfig());
      return file;
    },
    logFile: args.logFile,
    logLevel: args.logLevel,
    onCrash: (component, how) => harness?.noteCrash(component, how),
  });
  return {
    host,
    plan,
    start(server) {
      harness = new ChaosHarness({
        seed: chaos.seed,
        rate: chaos.rate,
        plan,
        server,
        host,
        namespace: DEFAULT_NAMESPACE,
        logger: args.logger,
      });
      harness.start();
    },
    async stop() {
      await harness?.stop();
    },
    summary: () => harness?.summary(),
  };
}

const pct = (v: number): string => `${Math.round(v * 1000) / 10} %`;

/**
 * The report's chaos lines; `pods` says how many created pods got an IP and
 * how many the workload ended before they ran.
 */
export function chaosLines(
  c: ChaosSummary,
  nodes: number,
  pods?: { served: number; created: number; endedWaiting: number },
): string[] {
  const by = Object.entries(c.faultsByStatus)
    .filter(([, n]) => n > 0)
    .map(([code, n]) => `${code} ×${n}`)
    .join(', ');
  const everyNode = Object.entries(c.restarts).filter(
    ([k, n]) => k.startsWith('sidecar-') && n > 0,
  ).length;
  const replicas = Object.entries(c.restarts).filter(([k]) => k.startsWith('fulfiller-'));
  const gap = ' '.repeat(31);
  return [
    `  chaos                        seed ${c.seed}, rate ${c.rate}`,
    `${gap}API writes ${c.apiWrites}, ${c.apiFaults} failed of ${c.chaosWrites} while faults were on (${pct(c.faultShare)}${by ? `: ${by}` : ''}; ${c.lostAnswers} of the 500s applied, answer lost)`,
    `${gap}watches dropped ${c.watchDrops} (${c.watchDropEvents} times), history compacted ${c.compactions} time${c.compactions === 1 ? '' : 's'} (${c.goneWatches} resumed watches got 410 Gone)`,
    `${gap}standby cut off the API server ${c.standbyCuts} times (${c.standbyCutConnections} connections ended, its watches among them; ${c.standbyRefusedConnections} refused while cut)`,
    `${gap}kill -9: sidecars restarted ${c.sidecarRestarts} (${everyNode}/${nodes} nodes), ` +
      `fulfillers restarted ${c.fulfillerRestarts} (${replicas.map(([k, n]) => `${k} ×${n}`).join(', ')}; the leader ${c.leaderKills} time${c.leaderKills === 1 ? '' : 's'})`,
    `${gap}nodes deleted ${c.nodeDeletions} (${c.nodeDeletionsWithoutFulfiller} while no fulfiller ran), registered again ${c.nodeReregistrations} (${c.unauthenticatedWhileNodesDeleted} requests of their sidecars refused 401 meanwhile)`,
    `${gap}crashes ${c.crashes.length}, unclean shutdowns ${c.uncleanShutdowns.length}` +
      (pods
        ? `; pods served ${pods.served} of ${pods.created} created` +
          (pods.endedWaiting ? ` (${pods.endedWaiting} ended by the workload before they ran)` : '')
        : ''),
  ];
}

/** What a chaos run must not end with; empty when it held. */
export function chaosProblems(c: ChaosSummary): string[] {
  return [
    ...c.crashes.map((x) => `${x.component} crashed (${x.how})`),
    ...c.uncleanShutdowns.map((x) => `${x.component} did not exit 0 on SIGTERM (${x.how})`),
  ];
}
