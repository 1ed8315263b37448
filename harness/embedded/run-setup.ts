// The embedded run's set-up (step 2 of run.ts): the Azure emulator when
// asked, the cluster, and the lines that tell the human where the API
// server, the kubeconfig and each node API are. What it starts goes on the
// run's stop list.
import type { Logger } from '../../src/log/logger.ts';
import type { StopSteps } from '../../src/sidecar/stop-steps.ts';
import type { ProgressBar } from '../../src/sim/report/progress.ts';
import type { Plan as WorkloadPlan } from '../workload/plan.ts';
import type { Scenario } from '../workload/scenario.ts';
import type { ScenarioLeaks } from '../workload/leaks.ts';
import type { EmbeddedAzure } from './azure.ts';
import { EMBEDDED_NODE_SUBNET } from './azure-report.ts';
import { prepareChaos, type ChaosRun } from './chaos/chaos.ts';
import { startEmbeddedCluster, type EmbeddedCluster } from './cluster.ts';
import { nodeApiLines } from './report.ts';
import { addUnfitNode } from './unfit-node.ts';
import type { EmbeddedIo, EmbeddedOptions } from './run-options.ts';
import { familiesOf, type IpFamilyChoice } from './ip-family.ts';
import { FamilyTally } from './family-tally.ts';

/** What the run will do, from the options and the scenario: checked before anything starts. */
export interface RunPlan {
  scenario: Scenario;
  nodeCount: number;
  durationSeconds: number;
  durationMs: number;
  /** The first of podSubnets (IPv4 unless the run is IPv6-only). */
  podSubnet: string;
  /** One per address family of the run, IPv4 first. */
  podSubnets: string[];
  ipFamily: IpFamilyChoice;
  nodeNames: string[];
  workload: WorkloadPlan;
  leaks: ScenarioLeaks | undefined;
}

/** Where the run writes: a scratch run directory and the component log. */
export interface RunPlace {
  runDir: string;
  logFile: string;
  /** The log is inside the run directory: keep the directory, drop the node state. */
  keepRunDir: boolean;
  logger: Logger;
  closeLog(): Promise<void>;
}

/** One run in progress: what every step reads. */
export interface Session {
  opts: EmbeddedOptions;
  io: EmbeddedIo;
  plan: RunPlan;
  place: RunPlace;
  log: Logger;
  bar: ProgressBar;
  say(line: string): void;
  /** What the set-up started, stopped last-in-first-out at the end. */
  stops: StopSteps;
}

/** The cluster up and said: what the scenario and the report need. */
export interface SetUp {
  cluster: EmbeddedCluster;
  azure: EmbeddedAzure | undefined;
  chaos: ChaosRun | undefined;
  /** The kubectl command line the human is shown. */
  kubectl: string;
  /** Every pod's wait for its IP, ms. */
  waits: number[];
  /** How long each pod the workload ended before it ran had waited, ms. */
  endedWaiting: number[];
  /** The pods served and the NNCs' addresses, by address family. */
  families: FamilyTally;
}

/** Step 2: the Azure emulator when asked, the cluster, and the lines that say where everything is. */
export async function setUp(session: Session): Promise<SetUp> {
  const { opts, plan, place, say, stops } = session;
  const { scenario, nodeCount, podSubnet, podSubnets, nodeNames, leaks } = plan;
  const waits: number[] = [];
  const endedWaiting: number[] = [];
  const families = new FamilyTally(plan.ipFamily, familiesOf(plan.ipFamily), podSubnets);
  const chaos: ChaosRun | undefined = opts.chaos
    ? prepareChaos({
        chaos: opts.chaos,
        nodeNames,
        durationMs: plan.durationMs,
        runDir: place.runDir,
        logFile: place.logFile,
        logLevel: opts.logLevel,
        logger: place.logger,
      })
    : undefined;
  say(
    `embedded: scenario ${scenario.name} (${scenario.description || 'no description'}), ` +
      `${nodeCount} node${nodeCount === 1 ? '' : 's'}, ${plan.durationSeconds} s, ` +
      (podSubnets.length > 1
        ? `pod subnets ${podSubnets.join(' and ')} (dual-stack)`
        : `pod subnet ${podSubnet}`),
  );
  say(`  component logs (JSON lines, level ${opts.logLevel}): ${place.logFile}`);
  const azure = opts.backend === 'azure' ? await startAzure(session) : undefined;
  const cluster = await startEmbeddedCluster({
    nodeNames,
    podSubnet,
    podSubnets,
    runDir: place.runDir,
    logger: place.logger,
    apiPort: opts.apiPort,
    tls: opts.tls === true,
    // kubectl --server=URL for the human of --serve (over HTTPS the kubeconfig is the way).
    anonymousAdmin: opts.serve && opts.tls !== true,
    events: opts.events ?? true,
    onRunning: (w) => {
      waits.push(w.waitMs);
      families.servedWith(w.ips);
    },
    onEndedWaiting: (e) => endedWaiting.push(e.waitedMs),
    ...(leaks
      ? { leaks: { dropReleaseRate: leaks.dropReleaseRate, graceSeconds: leaks.graceSeconds } }
      : {}),
    ...(azure ? { backend: { factory: azure.backend, providerID: azure.providerID } } : {}),
    ...(chaos ? { host: chaos.host } : {}),
    ...(opts.netns ? { netns: true } : {}),
  });
  stops.push('cluster', () => cluster.stop());
  if (azure?.unfit) await addUnfitNode(cluster.kc, azure.unfit.providerID, nodeCount);
  const kubectl = sayWhere(session, cluster);
  if (cluster.networks) {
    const nets = cluster.networks;
    say(
      `  netns: each node a network namespace (${plan.nodeNames.map((_, i) => nets.nodeNamespace(i)).join(', ')}), ` +
        `each pod one, the real chain macvlan + pool-monitor-cni for every ADD and DEL; ` +
        `conflists in ${place.runDir}/state/<node>/10-pool-monitor.conflist`,
    );
  }
  const ready = await cluster.whenReady(Math.max(15_000, nodeCount * 20));
  say(`  ${ready}/${nodeCount} sidecars ready; running the workload`);
  if (leaks) {
    const losses = leaks.storeLosses.map((l) => `${l.at} s (node ${l.nodes.join(', ')})`);
    say(
      `  leaks: kubelets drop ${Math.round(leaks.dropReleaseRate * 100)} % of CNI DELs, ` +
        `stores lost at ${losses.length ? losses.join(', ') : 'no time'}, leak grace ${leaks.graceSeconds} s`,
    );
  }
  return { cluster, azure, chaos, kubectl, waits, endedWaiting, families };
}

/** The ARM emulator as the fulfiller's backend (--backend azure). */
async function startAzure(session: Session): Promise<EmbeddedAzure> {
  const { opts, plan, say, stops } = session;
  const { startEmbeddedAzure, embeddedAzureOptions } = await import('./azure.ts');
  const layout = opts.azureLayout ?? 'mixed';
  const azure = await startEmbeddedAzure(
    plan.podSubnet,
    plan.nodeNames,
    {},
    layout,
    embeddedAzureOptions({
      realistic: opts.azureTiming === 'realistic',
      otherWriters: opts.azureOtherWriters === true,
    }),
  );
  stops.push('azure emulator', () => azure.stop());
  const { qps, burst } = azure.report();
  const subnets =
    layout === 'mixed'
      ? `pod subnet ${plan.podSubnet}`
      : `no pod subnet id: each NIC's own subnet, ${EMBEDDED_NODE_SUBNET} or ${plan.podSubnet}`;
  say(
    `  fulfiller backend: azure (ARM emulator, layout ${layout}, ${subnets}, ${qps} qps, burst ${burst})`,
  );
  if (opts.azureTiming === 'realistic')
    say('  ARM timing: realistic (NIC PUTs 10-60 s, scale-set VM updates 30-120 s)');
  if (opts.azureOtherWriters)
    say(
      '  other writers: cloud-provider-azure (stale whole-NIC PUTs), a scale-set reimage every 2 minutes',
    );
  return azure;
}

/** Says where the API server, the kubeconfig and each node API are; returns the kubectl to show. */
function sayWhere(session: Session, cluster: EmbeddedCluster): string {
  const { opts, say } = session;
  const { server } = cluster;
  say(`  API server: ${server.url}  (kubeconfig ${server.kubeconfigPath})`);
  // Tokens are required; in --serve over HTTP, requests without any are cluster-admin.
  const kubectl =
    opts.serve && !server.caPem
      ? `kubectl --server=${server.url}`
      : `kubectl --kubeconfig=${server.kubeconfigPath}`;
  say(`  node APIs (each node's sidecar; try curl URL/debug/pool):`);
  for (const line of nodeApiLines(cluster.nodes)) say(line);
  say(`  try: ${kubectl} get nnc -n kube-system`);
  say(
    `  access: RBAC with manifests/ applied; the fulfiller and each sidecar run with their own service-account token` +
      (opts.serve && !server.caPem
        ? `; kubectl without credentials is cluster-admin (for you, not the components)`
        : `; the kubeconfig's user is cluster-admin`),
  );
  if (opts.serve) {
    say(`  kubectl: ${kubectl} get nodes,pods -A -o wide`);
    say(`           ${kubectl} run web --image=nginx  (scheduled, Running with a pod IP)`);
  }
  return kubectl;
}
