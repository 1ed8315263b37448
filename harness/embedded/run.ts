// `bin/pool-monitor embedded`, as a function: load the scenario, start the
// embedded cluster, drive the workload, sample the cluster every interval
// (timeline, churn, exhaustion, invariants), then print and optionally write
// the report. A scenario's leaks (or --leak-rate) make the kubelets drop CNI
// DELs and nodes lose their stores; the report then says what was reclaimed
// and rebuilt. With `serve` everything stays up after the scenario until the
// abort signal (SIGINT/SIGTERM in the CLI). The terminal gets the human
// output; the components' JSON logs go to a file in the run directory. With
// `chaos`, the sidecars and fulfillers run as processes that the chaos
// harness kills, while the API server fails writes and drops watches
// (harness/embedded/chaos/).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogLevel } from '../../src/log/logger.ts';
import { GROUP, CSS_PLURAL, DEFAULT_NAMESPACE, NNC_PLURAL } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import type { PodSnapshot, Violation } from '../../src/sim/invariants.ts';
import { ProgressBar, type ProgressStream } from '../../src/sim/report/progress.ts';
import {
  buildReport,
  renderReport,
  requestsByVerb,
  type Report,
} from '../../src/sim/report/report.ts';
import { kubePodApi } from '../workload/kube.ts';
import { loadScenario } from '../workload/load.ts';
import { planScenario } from '../workload/plan.ts';
import { WorkloadDriver } from '../workload/driver.ts';
import {
  productAccessReport,
  refusals,
  type Component,
  type ProductAccessReport,
} from './access.ts';
import type { EmbeddedAzure } from './azure.ts';
import { addUnfitNode, unfitNodeOutcome } from './unfit-node.ts';
import {
  azureReportLines,
  EMBEDDED_NODE_SUBNET,
  type AzureReport,
  type EmbeddedAzureLayout,
  type EmbeddedBackend,
} from './azure-report.ts';
import { startEmbeddedCluster, WORKLOAD_NAMESPACE, type EmbeddedCluster } from './cluster.ts';
import { startLeakRun, type LeakRun } from './leak-run.ts';
import { leakLines, runLeaks, type LeakReport } from './leaks.ts';
import { fileLogger } from './log-file.ts';
import { newRunLogFile } from './log-place.ts';
import { ClusterSampler, type ExhaustionSummary, type SubnetStateSnapshot } from './sampler.ts';
import {
  chaosLines,
  chaosProblems,
  MAX_CHAOS_NODES,
  prepareChaos,
  type ChaosOptions,
  type ChaosRun,
  type ChaosSummary,
} from './chaos/chaos.ts';

export const DEFAULT_POD_SUBNET = '10.240.0.0/16';

export interface EmbeddedOptions {
  /** Built-in scenario name or YAML/JSON file. */
  scenario: string;
  /** Overrides the scenario's node count. */
  nodes?: number;
  /** Overrides the scenario's duration, seconds. */
  durationSeconds?: number;
  /** 0: ephemeral. */
  apiPort: number;
  serve: boolean;
  reportFile?: string;
  logLevel: LogLevel;
  /** Sampling interval; default 1 s, longer for big clusters. */
  sampleMs?: number;
  /** Kubernetes Events from the components (default true). */
  events?: boolean;
  /** The API server serves HTTPS with a CA made at start (in the kubeconfig). */
  tls?: boolean;
  /** Where the component log goes; default a new file in the user's state dir (log-place.ts). */
  logFile?: string;
  /** Share of CNI DELs the kubelets drop; overrides the scenario's leaks.dropReleaseRate. */
  leakRate?: number;
  /** The fulfiller's backend: cidr (default) or azure (the ARM emulator, azure.ts). */
  backend?: EmbeddedBackend;
  /** With the azure backend: the emulated VMs' layout (default mixed). */
  azureLayout?: EmbeddedAzureLayout;
  /** Fail writes, drop watches, compact history, kill -9 the components (harness/embedded/chaos/). */
  chaos?: ChaosOptions;
}

export interface EmbeddedIo {
  /** Human output (URL, progress, report). */
  out: ProgressStream & { write(text: string): unknown };
  /** Violations and errors. */
  err: { write(text: string): unknown };
  /** Ends the run early (or, with serve, after the scenario). */
  signal?: AbortSignal;
  /** Parent of the run directory (default the OS temp dir). */
  tmpRoot?: string;
  /** Environment for the default log place (default process.env). */
  env?: Record<string, string | undefined>;
}

/** The JSON report: the shared report plus what the embedded run adds. */
export interface EmbeddedReport extends Report {
  podSubnet: string;
  exhaustion: ExhaustionSummary;
  scaling: { up: boolean; down: boolean };
  violations: Violation[];
  stoppedEarly: boolean;
  /** With leaks: dropped DELs, reclaims, adoptions and lost stores. */
  leaks?: LeakReport;
  /**
   * What the API server (RBAC, admission) allowed and refused each component,
   * running with exactly what manifests/ grants it, and the requests refused
   * as unauthenticated. Any refusal fails the run.
   */
  access: ProductAccessReport;
  /** With --backend azure: ARM requests by operation and status, NIC PUTs per node. */
  azure?: AzureReport;
  /** What the chaos harness did (with --chaos). */
  chaos?: ChaosSummary;
}

export interface EmbeddedResult {
  report: EmbeddedReport;
  exitCode: number;
  runDir: string;
  logFile: string;
}

/** Sampling interval by size: 1 s up to 200 nodes, then slower so sampling stays cheap. */
export function defaultSampleMs(nodes: number): number {
  return nodes <= 200 ? 1000 : Math.min(5000, Math.ceil(nodes / 200) * 1000);
}

/** One line per node, `node-0  http://127.0.0.1:PORT`, in node order. */
export function nodeApiLines(
  nodes: readonly { name: string; sidecar: { url: string } }[],
): string[] {
  return nodes.map((n) => `${n.name}  ${n.sidecar.url}`);
}

/** The access line of the report. */
export function accessLine(a: EmbeddedReport['access']): string {
  const part = (c: Component, label: string): string =>
    `${label} ${a[c].allowed} allowed, ${a[c].refused.length + a[c].denied.length} refused`;
  const none = refusals(a).length === 0 ? '' : ' (see above)';
  return `  access (manifests' RBAC)     ${part('sidecar', 'sidecars')}; ${part('fulfiller', 'fulfiller')}${none}`;
}

/** The exhaustion line of the report. */
export function exhaustionLine(e: ExhaustionSummary): string {
  if (!e.happened) return '  subnet exhaustion            no (the pod subnet never ran low)';
  const recovered =
    e.recoveredAtSeconds === null
      ? 'still exhausted at the end'
      : `recovered at ${e.recoveredAtSeconds} s`;
  return `  subnet exhaustion            yes, CSS exhausted at ${e.firstAtSeconds} s, ${recovered}`;
}

export function renderEmbeddedReport(r: EmbeddedReport): string[] {
  const lines = renderReport(r);
  const scaling = `  scaling                      ${r.scaling.up ? 'scaled up' : 'no scale-up'}, ${r.scaling.down ? 'scaled down' : 'no scale-down'}  (pod subnet ${r.podSubnet})`;
  // After the figures, before the chart (the blank line).
  const at = lines.indexOf('');
  lines.splice(
    at < 0 ? lines.length : at,
    0,
    exhaustionLine(r.exhaustion),
    scaling,
    ...(r.leaks ? leakLines(r.leaks) : []),
    accessLine(r.access),
    ...(r.azure ? azureReportLines(r.azure) : []),
    ...(r.chaos
      ? chaosLines(r.chaos, r.nodes, { served: r.podWait.count, created: r.pods?.created ?? 0 })
      : []),
  );
  if (r.stoppedEarly) lines[0] = `${lines[0]} (stopped early by a signal)`;
  return lines;
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function runEmbedded(opts: EmbeddedOptions, io: EmbeddedIo): Promise<EmbeddedResult> {
  // Bad input fails here, before anything starts.
  const scenario = loadScenario(opts.scenario);
  const nodeCount = opts.nodes ?? scenario.nodes;
  const durationSeconds = opts.durationSeconds ?? scenario.durationSeconds;
  const podSubnet = scenario.podSubnet ?? DEFAULT_POD_SUBNET;
  const nodeNames = Array.from({ length: nodeCount }, (_, i) => `node-${i}`);
  if (opts.chaos && nodeCount > MAX_CHAOS_NODES) {
    throw new Error(
      `--chaos runs every sidecar as a process of its own: at most ${MAX_CHAOS_NODES} nodes, the run has ${nodeCount}`,
    );
  }
  const plan = planScenario(scenario, nodeNames);
  const leaks = runLeaks(scenario.leaks, opts.leakRate);
  if (opts.chaos && leaks) {
    throw new Error(
      "--chaos does not combine with leaks (--leak-rate or the scenario's leaks): the leak figures read the sidecars in this process",
    );
  }
  const durationMs = Math.round(durationSeconds * 1000);
  plan.actions = plan.actions.filter((a) => a.atMs <= durationMs);
  plan.durationMs = durationMs;

  // The run directory is scratch, removed at the end; the log outlives it
  // unless there is nowhere else to put it.
  const runDir = mkdtempSync(join(io.tmpRoot ?? tmpdir(), 'pool-monitor-embedded-'));
  const logFile =
    opts.logFile ?? newRunLogFile(io.env ?? process.env) ?? join(runDir, 'embedded.log');
  const keepRunDir = logFile.startsWith(`${runDir}/`);
  const { logger, close: closeLog } = fileLogger(logFile, opts.logLevel);
  const log = logger.child({ component: 'embedded' });
  const say = (line: string) => io.out.write(`${line}\n`);
  const signal = io.signal;

  const waits: number[] = [];
  let azure: EmbeddedAzure | undefined;
  const chaos: ChaosRun | undefined = opts.chaos
    ? prepareChaos({
        chaos: opts.chaos,
        nodeNames,
        durationMs,
        runDir,
        logFile,
        logLevel: opts.logLevel,
        logger,
      })
    : undefined;
  let cluster: EmbeddedCluster | undefined;
  let driver: WorkloadDriver | undefined;
  let sampler: ClusterSampler | undefined;
  const bar = new ProgressBar(io.out);
  try {
    say(
      `embedded: scenario ${scenario.name} (${scenario.description || 'no description'}), ` +
        `${nodeCount} node${nodeCount === 1 ? '' : 's'}, ${durationSeconds} s, pod subnet ${podSubnet}`,
    );
    say(`  component logs (JSON lines, level ${opts.logLevel}): ${logFile}`);
    if (opts.backend === 'azure') {
      const { startEmbeddedAzure } = await import('./azure.ts');
      const layout = opts.azureLayout ?? 'mixed';
      azure = await startEmbeddedAzure(podSubnet, nodeNames, {}, layout);
      const { qps, burst } = azure.report();
      const subnets =
        layout === 'mixed'
          ? `pod subnet ${podSubnet}`
          : `no pod subnet id: each NIC's own subnet, ${EMBEDDED_NODE_SUBNET} or ${podSubnet}`;
      say(
        `  fulfiller backend: azure (ARM emulator, layout ${layout}, ${subnets}, ${qps} qps, burst ${burst})`,
      );
    }
    cluster = await startEmbeddedCluster({
      nodeNames,
      podSubnet,
      runDir,
      logger,
      apiPort: opts.apiPort,
      tls: opts.tls === true,
      // kubectl --server=URL for the human of --serve (over HTTPS the kubeconfig is the way).
      anonymousAdmin: opts.serve && opts.tls !== true,
      events: opts.events ?? true,
      onRunning: (w) => waits.push(w.waitMs),
      ...(leaks
        ? { leaks: { dropReleaseRate: leaks.dropReleaseRate, graceSeconds: leaks.graceSeconds } }
        : {}),
      ...(azure ? { backend: { factory: azure.backend, providerID: azure.providerID } } : {}),
      ...(chaos ? { host: chaos.host } : {}),
    });
    const { server } = cluster;
    if (azure?.unfit) await addUnfitNode(cluster.kc, azure.unfit.providerID, nodeNames.length);
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
    const ready = await cluster.whenReady(Math.max(15_000, nodeCount * 20));
    say(`  ${ready}/${nodeCount} sidecars ready; running the workload`);
    if (leaks) {
      const losses = leaks.storeLosses.map((l) => `${l.at} s (node ${l.nodes.join(', ')})`);
      say(
        `  leaks: kubelets drop ${Math.round(leaks.dropReleaseRate * 100)} % of CNI DELs, ` +
          `stores lost at ${losses.length ? losses.join(', ') : 'no time'}, leak grace ${leaks.graceSeconds} s`,
      );
    }

    const s = new ClusterSampler();
    sampler = s;
    const t0 = Date.now();
    const leakRun: LeakRun | undefined = leaks
      ? startLeakRun(cluster, leaks, t0, logger)
      : undefined;
    const violated: Violation[] = [];
    const takeSample = (): void => {
      const snap = {
        // Every pod: the workload's and any a person created with kubectl.
        pods: server.objects('', 'pods') as PodSnapshot[],
        nncs: server.objects(
          GROUP,
          NNC_PLURAL,
          DEFAULT_NAMESPACE,
        ) as unknown as NodeNetworkConfig[],
        subnets: server.objects(GROUP, CSS_PLURAL, DEFAULT_NAMESPACE) as SubnetStateSnapshot[],
      };
      for (const v of s.sample((Date.now() - t0) / 1000, snap)) {
        violated.push(v);
        bar.done();
        io.err.write(`INVARIANT VIOLATED: ${v.message}\n`);
        log.error('invariant violated', { ...v });
      }
    };
    takeSample();
    // Under chaos the invariants are checked twice a second.
    const sampleMs = opts.sampleMs ?? (chaos ? 500 : defaultSampleMs(nodeCount));
    const timer = setInterval(() => {
      takeSample();
      const elapsed = (Date.now() - t0) / 1000;
      if (elapsed <= durationSeconds) bar.update(elapsed, durationSeconds, scenario.name);
    }, sampleMs);

    driver = new WorkloadDriver({
      api: kubePodApi(cluster.kc),
      plan,
      namespace: WORKLOAD_NAMESPACE,
      concurrency: 32,
      logger: logger.child({ component: 'workload' }),
    });
    const driving = driver.run();
    if (chaos) {
      say(
        `  chaos: rate ${opts.chaos?.rate}, seed ${opts.chaos?.seed} ` +
          `(replay with --chaos ${opts.chaos?.rate} --seed ${opts.chaos?.seed}), ${chaos.plan.length} planned actions`,
      );
      chaos.start(server);
    }
    await delay(durationMs, signal);
    const stoppedEarly = signal?.aborted === true;
    await driver.stop();
    await driving;
    await chaos?.stop();
    if (opts.serve && !stoppedEarly) {
      bar.done();
      say(
        `scenario done; serving on ${server.url} until SIGINT/SIGTERM ` +
          `(${kubectl} get nodes,nnc,pods -A)`,
      );
      await delay(2 ** 31 - 1, signal);
    }
    clearInterval(timer);
    await leakRun?.settle();
    takeSample();
    bar.done();

    const counters = server.counters();
    const base = buildReport({
      scenario: scenario.name,
      nodes: nodeCount,
      durationSeconds: (Date.now() - t0) / 1000,
      podWaitsMs: waits,
      nncWrites: counters.count('patch', NNC_PLURAL),
      samples: s.samples,
      apiRequestsByVerb: requestsByVerb(counters.entries()),
      ipChurn: s.churn.totals(),
      pods: {
        created: driver.counters.created,
        completed: driver.counters.completed,
        deleted: driver.counters.deleted,
        waitingAtEnd: s.waitingPods(),
      },
      invariantViolations: s.violations.length,
    });
    // The leak figures read the sidecars' stores: taken while they are open.
    const leakReport = leakRun?.report();
    const unfit = azure?.unfit
      ? await unfitNodeOutcome(cluster.kc, azure.unfit.armWrites())
      : undefined;
    // The components stop (SIGTERM) before the report, so it can say whether they stopped cleanly.
    await cluster.stop();
    const chaosSummary = chaos?.summary();
    const report: EmbeddedReport = {
      ...base,
      podSubnet,
      exhaustion: s.exhaustionSummary(),
      scaling: s.scaling(),
      violations: s.violations,
      stoppedEarly,
      ...(leakReport ? { leaks: leakReport } : {}),
      access: productAccessReport(server.authorizations(), cluster.access.accounts),
      ...(azure ? { azure: { ...azure.report(), ...(unfit ? { unfit } : {}) } } : {}),
      ...(chaosSummary ? { chaos: chaosSummary } : {}),
    };
    say('');
    for (const line of renderEmbeddedReport(report)) say(line);
    if (opts.reportFile) {
      writeFileSync(opts.reportFile, `${JSON.stringify(report, null, 2)}\n`);
      say(`report written to ${opts.reportFile}`);
    }
    if (s.violations.length > 0) {
      io.err.write(`FAILED: ${s.violations.length} persistent invariant violation(s):\n`);
      for (const v of s.violations.slice(0, 20)) io.err.write(`  ${v.kind}: ${v.message}\n`);
    }
    const refused = refusals(report.access);
    if (refused.length > 0) {
      io.err.write(`FAILED: the API server refused what the product needs (manifests/):\n`);
      for (const line of refused.slice(0, 20)) io.err.write(`  ${line}\n`);
    }
    // Under chaos the product must also not crash, stop cleanly, and serve every pod.
    const problems = chaosSummary ? chaosProblems(chaosSummary) : [];
    if (chaosSummary && !stoppedEarly && (report.pods?.waitingAtEnd ?? 0) > 0)
      problems.push(`${report.pods?.waitingAtEnd} pod(s) still waiting for an IP at the end`);
    for (const p of problems) io.err.write(`FAILED: ${p}\n`);
    const failed = s.violations.length > 0 || refused.length > 0 || problems.length > 0;
    return { report, exitCode: failed ? 1 : 0, runDir, logFile };
  } finally {
    bar.done();
    await driver?.stop().catch(() => {});
    await cluster?.stop().catch((e: unknown) => log.warn('stop failed', { error: String(e) }));
    await azure?.stop().catch((e: unknown) => log.warn('stop failed', { error: String(e) }));
    log.info('embedded run finished', { violations: sampler?.violations.length ?? 0 });
    await closeLog();
    // Node state and kubeconfig are scratch; the log stays for reading.
    if (keepRunDir) rmSync(join(runDir, 'state'), { recursive: true, force: true });
    else rmSync(runDir, { recursive: true, force: true });
  }
}
