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
//
// The run is four named steps: plan (bad input fails here, before anything
// starts), set up (the Azure emulator when asked, the cluster, the lines
// that say where everything is), run the scenario (the workload, the
// invariant watch, chaos), report. What the set-up starts is stopped through
// one last-in-first-out list of named, time-bounded steps
// (src/sidecar/stop-steps.ts): workload, cluster, Azure emulator; then the
// log closes and the scratch goes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_NAMESPACE, NNC_PLURAL } from '../../src/nnc/types.ts';
import { StopSteps } from '../../src/sidecar/stop-steps.ts';
import { ProgressBar } from '../../src/sim/report/progress.ts';
import { buildReport, requestsByVerb } from '../../src/sim/report/report.ts';
import { kubePodApi } from '../workload/kube.ts';
import { loadScenario } from '../workload/load.ts';
import { planScenario } from '../workload/plan.ts';
import { WorkloadDriver } from '../workload/driver.ts';
import { productAccessReport } from './access.ts';
import { WORKLOAD_NAMESPACE } from './cluster.ts';
import { InvariantWatch } from './invariant-watch.ts';
import { startLeakRun, type LeakRun } from './leak-run.ts';
import { runLeaks } from './leaks.ts';
import { unfitNodeOutcome } from './unfit-node.ts';
import { fileLogger } from './log-file.ts';
import { newRunLogFile } from './log-place.ts';
import {
  failureLines,
  renderEmbeddedReport,
  strandedSeconds,
  watchRequestCounts,
  watchRequests,
  type EmbeddedReport,
} from './report.ts';
import {
  DEFAULT_POD_SUBNET,
  defaultSampleMs,
  type EmbeddedIo,
  type EmbeddedOptions,
} from './run-options.ts';
import { familiesOf, podSubnets } from './ip-family.ts';
import { setUp, type RunPlace, type RunPlan, type Session, type SetUp } from './run-setup.ts';
import { MAX_CHAOS_NODES } from './chaos/chaos.ts';
import { fulfillerLease, someReplicaLeads } from './chaos/lease-holder.ts';
import { MAX_NETNS_NODES, MAX_NETNS_PODS, whyNoNetns } from './node-networks.ts';
import { waitStats } from '../../src/sim/report/stats.ts';

// The command's options and defaults, for the CLI and the tests.
export * from './run-options.ts';
export {
  accessLine,
  exhaustionLine,
  nodeApiLines,
  renderEmbeddedReport,
  type EmbeddedReport,
} from './report.ts';

export interface EmbeddedResult {
  report: EmbeddedReport;
  exitCode: number;
  runDir: string;
  logFile: string;
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

/** What the scenario left for the report. */
export interface Outcome {
  watch: InvariantWatch;
  driver: WorkloadDriver;
  leakRun: LeakRun | undefined;
  stoppedEarly: boolean;
  /** Watch requests by resource when the scenario started. */
  watchesAtStart: Record<string, number>;
}

/**
 * How long a run may go on past the scenario's duration for its planned
 * actions to be done and its pods to have their IPs: a loaded machine can
 * still be at the last deletes, or at the last pods' IPs, when the time is
 * up, and a scenario's report counts what it planned.
 */
const SETTLE_MS = 30_000;
const SETTLE_POLL_MS = 200;

/**
 * Waits for the workload's planned actions, then until no pod waits for an
 * IP and the kubelets have told what became of every pod they set up: a pod
 * the workload deleted leaves the API before its kubelet has wound its
 * setup down and said so (on a loaded machine, seconds later), and the
 * report counts what was told. At most SETTLE_MS in all, or until the
 * abort signal.
 */
async function settle(
  driving: Promise<void>,
  watch: InvariantWatch,
  kubeletsSettingUp: () => Promise<number>,
  signal?: AbortSignal,
) {
  const timeLeft = new AbortController();
  const onAbort = (): void => timeLeft.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(onAbort, SETTLE_MS);
  try {
    await Promise.race([driving, delay(SETTLE_MS, timeLeft.signal)]);
    for (;;) {
      watch.sample();
      if (timeLeft.signal.aborted) return;
      // A kubelet that cannot answer (its thread ended) has nothing more to tell.
      if (watch.sampler.waitingPods() === 0 && (await kubeletsSettingUp().catch(() => 0)) === 0)
        return;
      await delay(SETTLE_POLL_MS, timeLeft.signal);
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    timeLeft.abort();
  }
}

/** How long each of the run's stop steps (workload, cluster, Azure emulator) may take. */
const RUN_STOP_BOUND_MS = 240_000;

export async function runEmbedded(opts: EmbeddedOptions, io: EmbeddedIo): Promise<EmbeddedResult> {
  const plan = planRun(opts);
  const place = openRunPlace(opts, io);
  const log = place.logger.child({ component: 'embedded' });
  const session: Session = {
    opts,
    io,
    plan,
    place,
    log,
    bar: new ProgressBar(io.out),
    say: (line) => io.out.write(`${line}\n`),
    stops: new StopSteps(),
  };
  let violations = 0;
  try {
    const up = await setUp(session);
    const outcome = await runScenario(session, up);
    violations = outcome.watch.sampler.violations.length;
    return await report(session, up, outcome);
  } finally {
    session.bar.done();
    await session.stops.run(log, RUN_STOP_BOUND_MS);
    log.info('embedded run finished', { violations });
    await place.closeLog();
    // Node state and kubeconfig are scratch; the log stays for reading.
    if (place.keepRunDir) rmSync(join(place.runDir, 'state'), { recursive: true, force: true });
    else rmSync(place.runDir, { recursive: true, force: true });
  }
}

/** Step 1: the scenario and the options checked together; bad input fails here. */
function planRun(opts: EmbeddedOptions): RunPlan {
  const scenario = loadScenario(opts.scenario);
  const nodeCount = opts.nodes ?? scenario.nodes;
  const durationSeconds = opts.durationSeconds ?? scenario.durationSeconds;
  const nodeNames = Array.from({ length: nodeCount }, (_, i) => `node-${i}`);
  if (opts.chaos && nodeCount > MAX_CHAOS_NODES) {
    throw new Error(
      `--chaos runs every sidecar as a process of its own: at most ${MAX_CHAOS_NODES} nodes, the run has ${nodeCount}`,
    );
  }
  const workload = planScenario(scenario, nodeNames);
  const leaks = runLeaks(scenario.leaks, opts.leakRate);
  if (opts.chaos && leaks) {
    throw new Error(
      "--chaos does not combine with leaks (--leak-rate or the scenario's leaks): the leak figures read the sidecars in this process",
    );
  }
  const durationMs = Math.round(durationSeconds * 1000);
  workload.actions = workload.actions.filter((a) => a.atMs <= durationMs);
  if (opts.netns) checkNetns(opts, nodeCount, workload.actions, leaks !== undefined);
  workload.durationMs = durationMs;
  const ipFamily = opts.ipFamily ?? 'ipv4';
  // Azure has no IPv6-only subnet; a dual-stack pod subnet (an IPv6 /64 beside
  // the IPv4 prefix, one IPv6 ipConfiguration per NIC unless ARM allows
  // more) is not laid out in the emulated cloud of this command yet.
  if (ipFamily !== 'ipv4' && opts.backend === 'azure')
    throw new Error(
      ipFamily === 'ipv6'
        ? '--ip-family ipv6: an Azure subnet has an IPv4 prefix, alone or with an IPv6 one; use --backend cidr'
        : '--ip-family dual: the embedded Azure emulator has no dual-stack pod subnet yet; use --backend cidr',
    );
  const subnets = podSubnets(scenario.podSubnet ?? DEFAULT_POD_SUBNET, ipFamily);
  return {
    scenario,
    nodeCount,
    durationSeconds,
    durationMs,
    podSubnet: subnets[0]!,
    podSubnets: subnets,
    ipFamily,
    nodeNames,
    workload,
    leaks,
  };
}

/** --netns: root, the reference plugins, a small cluster, no chaos or leaks; else a clear error. */
function checkNetns(
  opts: EmbeddedOptions,
  nodeCount: number,
  actions: RunPlan['workload']['actions'],
  leaks: boolean,
): void {
  const why = whyNoNetns();
  if (why) throw new Error(`--netns: ${why}`);
  if (opts.chaos || leaks || opts.backend === 'azure')
    throw new Error(
      '--netns runs the CIDR backend without --chaos or leaks (--leak-rate, a leaky scenario)',
    );
  if (nodeCount > MAX_NETNS_NODES)
    throw new Error(
      `--netns makes a network namespace for every node and pod: at most ${MAX_NETNS_NODES} nodes, the run has ${nodeCount}`,
    );
  const pods = actions.filter((a) => a.kind === 'create').length;
  if (pods > MAX_NETNS_PODS)
    throw new Error(
      `--netns runs the real plugin chain for every pod: at most ${MAX_NETNS_PODS} pods created, the scenario creates ${pods} (try --scenario netns)`,
    );
}

/**
 * The run directory is scratch, removed at the end; the log outlives it
 * unless there is nowhere else to put it.
 */
function openRunPlace(opts: EmbeddedOptions, io: EmbeddedIo): RunPlace {
  const runDir = mkdtempSync(join(io.tmpRoot ?? tmpdir(), 'pool-monitor-embedded-'));
  const logFile =
    opts.logFile ?? newRunLogFile(io.env ?? process.env) ?? join(runDir, 'embedded.log');
  const { logger, close } = fileLogger(logFile, opts.logLevel);
  return { runDir, logFile, keepRunDir: logFile.startsWith(`${runDir}/`), logger, closeLog: close };
}

/**
 * Step 3: the workload for the scenario's duration under the invariant watch
 * (and chaos); with serve, everything stays up until the abort signal.
 */
async function runScenario(session: Session, up: SetUp): Promise<Outcome> {
  const { opts, io, plan, place, log, bar, say, stops } = session;
  const { cluster, chaos } = up;
  const { server } = cluster;
  const signal = io.signal;
  const watch = new InvariantWatch({
    server,
    bar,
    err: io.err,
    log,
    families: familiesOf(plan.ipFamily),
    onNncs: (nncs) => up.families.observe(nncs),
    ...(chaos
      ? {
          fulfillerLeads: () =>
            someReplicaLeads(
              fulfillerLease(server, DEFAULT_NAMESPACE),
              chaos.host.fulfillers,
              Date.now(),
            ),
        }
      : {}),
  });
  const leakRun = plan.leaks
    ? startLeakRun(cluster, plan.leaks, watch.t0, place.logger)
    : undefined;
  // Under chaos the invariants are checked twice a second.
  const sampleMs = opts.sampleMs ?? (chaos ? 500 : defaultSampleMs(plan.nodeCount));
  const watchesAtStart = watchRequestCounts(server.counters().entries());
  watch.start(sampleMs, plan.durationSeconds, plan.scenario.name);
  const driver = new WorkloadDriver({
    api: kubePodApi(cluster.kc),
    plan: plan.workload,
    namespace: WORKLOAD_NAMESPACE,
    concurrency: 32,
    logger: place.logger.child({ component: 'workload' }),
  });
  stops.push('workload', () => driver.stop());
  const driving = driver.run();
  if (chaos) {
    say(
      `  chaos: rate ${opts.chaos?.rate}, seed ${opts.chaos?.seed} ` +
        `(replay with --chaos ${opts.chaos?.rate} --seed ${opts.chaos?.seed}), ${chaos.plan.length} planned actions`,
    );
    chaos.start(server);
  }
  await delay(plan.durationMs, signal);
  if (signal?.aborted !== true) await settle(driving, watch, () => cluster.settingUp(), signal);
  const stoppedEarly = signal?.aborted === true;
  await driver.stop();
  await driving;
  await chaos?.stop();
  if (opts.serve && !stoppedEarly) {
    bar.done();
    say(
      `scenario done; serving on ${server.url} until SIGINT/SIGTERM ` +
        `(${up.kubectl} get nodes,nnc,pods -A)`,
    );
    await delay(2 ** 31 - 1, signal);
  }
  watch.stop();
  await leakRun?.settle();
  watch.sample();
  bar.done();
  return { watch, driver, leakRun, stoppedEarly, watchesAtStart };
}

/** Step 4: the report, printed (and written with --report); the exit code says whether the run passed. */
async function report(session: Session, up: SetUp, outcome: Outcome): Promise<EmbeddedResult> {
  const { opts, io, plan, place, say } = session;
  const { cluster, azure, chaos } = up;
  const { watch, driver } = outcome;
  const s = watch.sampler;
  const counters = cluster.server.counters();
  const base = buildReport({
    scenario: plan.scenario.name,
    nodes: plan.nodeCount,
    durationSeconds: watch.elapsed(),
    podWaitsMs: up.waits,
    nncWrites: counters.count('patch', NNC_PLURAL),
    samples: s.samples,
    apiRequestsByVerb: requestsByVerb(counters.entries()),
    ipChurn: s.churn.totals(),
    pods: {
      created: driver.counters.created,
      completed: driver.counters.completed,
      deleted: driver.counters.deleted,
      waitingAtEnd: s.waitingPods(),
      endedWaiting: up.endedWaiting.length,
      endedWaitingMaxMs: waitStats(up.endedWaiting).maxMs ?? 0,
    },
    invariantViolations: s.violations.length,
  });
  const watchesDuring = watchRequests(
    outcome.watchesAtStart,
    watchRequestCounts(counters.entries()),
    plan.nodeCount,
    watch.elapsed(),
  );
  // The leak figures read the sidecars' stores: taken while they are open.
  const leakReport = outcome.leakRun?.report();
  const scheduleSignal = scheduleSignalSummary(cluster.nodes, watch.t0);
  const unfit = azure?.unfit
    ? await unfitNodeOutcome(cluster.kc, azure.unfit.armWrites())
    : undefined;
  // The components stop (SIGTERM) before the report, so it can say whether they stopped cleanly.
  await cluster.stop();
  const chaosSummary = chaos?.summary();
  const result: EmbeddedReport = {
    ...base,
    podSubnet: plan.podSubnet,
    families: up.families.report(),
    exhaustion: s.exhaustionSummary(),
    scaling: s.scaling(),
    violations: s.violations,
    stoppedEarly: outcome.stoppedEarly,
    ...(leakReport ? { leaks: leakReport } : {}),
    access: productAccessReport(cluster.server.authorizations(), cluster.access.accounts),
    ...(azure ? { azure: { ...azure.report(), ...(unfit ? { unfit } : {}) } } : {}),
    ...(chaosSummary ? { chaos: chaosSummary } : {}),
    watchRequests: watchesDuring,
    ...(scheduleSignal ? { scheduleSignal } : {}),
    ...(cluster.networks ? { netns: cluster.networks.report() } : {}),
  };
  say('');
  for (const line of renderEmbeddedReport(result)) say(line);
  if (opts.reportFile) {
    writeFileSync(opts.reportFile, `${JSON.stringify(result, null, 2)}\n`);
    say(`report written to ${opts.reportFile}`);
  }
  const failures = failureLines(result);
  for (const line of failures) io.err.write(`${line}\n`);
  return {
    report: result,
    exitCode: failures.length > 0 ? 1 : 0,
    runDir: place.runDir,
    logFile: place.logFile,
  };
}

/** The schedule signal's figures, from the in-process sidecars (none when they run as processes). */
function scheduleSignalSummary(
  nodes: SetUp['cluster']['nodes'],
  from: number,
): EmbeddedReport['scheduleSignal'] {
  const sidecars = nodes.map((n) => ({ name: n.name, sidecar: n.sidecar.inProcess }));
  if (sidecars.some((n) => n.sidecar === undefined)) return undefined;
  const loops = sidecars.map((n) => ({ name: n.name, loop: n.sidecar?.scheduleSignal }));
  const stranded = strandedSeconds(
    loops.map((l) => ({ name: l.name, marks: l.loop?.history() ?? [] })),
    from,
    Date.now(),
  );
  return {
    on: loops.some((l) => l.loop?.enabled === true),
    changes: loops.reduce((n, l) => n + (l.loop?.status().changes ?? 0), 0),
    strandedSeconds: stranded.seconds,
    strandedNodes: stranded.nodes,
  };
}
