// Embedded-cluster benchmark: N nodes (default 1,000), each with its real
// sidecar and simulated kubelet, on one local API server and fulfiller in
// this one process, the sidecars and a third of the kubelets in a worker
// thread of their own (the second core: harness/embedded/worker-host.ts);
// P pods per node (default 30) created at once, over plain HTTP
// (harness/embedded/http-pod-api.ts). Prints the set-up time, the time until
// every pod is Running with an IP and every pool is back at its target,
// request counts, invariant violations and memory, and the whole (set-up +
// convergence) against its goal: under 30 s on two cores with 0 violations.
// Run: node bench/embedded.ts   (BENCH_NODES, BENCH_PODS change the size;
// BENCH_SIDECARS=in-process keeps the sidecars on the main thread;
// BENCH_KUBELET_SHARE, 0 to 1, how many kubelets run beside their sidecars.)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startEmbeddedCluster, WORKLOAD_NAMESPACE } from '../harness/embedded/cluster.ts';
import { fileLogger } from '../harness/embedded/log-file.ts';
import { GROUP, NNC_PLURAL, DEFAULT_NAMESPACE } from '../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../src/nnc/types.ts';
import { checkClusterInvariants, type PodSnapshot } from '../src/sim/invariants.ts';
import { waitStats } from '../src/sim/report/stats.ts';
import { requestsByVerb } from '../src/sim/report/report.ts';
import {
  watchRequestCounts,
  watchRequests,
  watchRequestsLine,
} from '../harness/embedded/report.ts';
import { httpPodApi } from '../harness/embedded/http-pod-api.ts';
import { planScenario } from '../harness/workload/plan.ts';
import { parseScenario } from '../harness/workload/scenario.ts';
import { WorkloadDriver } from '../harness/workload/driver.ts';
import { inShare, workerHost } from '../harness/embedded/worker-host.ts';
import { againstGoal, runInfo } from './run-info.ts';

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const IN_PROCESS = process.env.BENCH_SIDECARS === 'in-process';
/** The goal (issue: 1,000 nodes x 30 pods embedded): set-up and convergence together. */
const GOAL_MS = 30_000;
const PODS = Number(process.env.BENCH_PODS ?? 30);
const mb = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

// Every node holds ~14 file descriptors at the peak (measured: 14,175 at
// 1,000 nodes): its 4 watch streams (both ends in this process), its node API
// listener and at most two keep-alive CNI connections (both ends), 3 SQLite
// files; requests share one keep-alive pool. Say so up front rather than
// dying with EMFILE.
const fdLimit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
if (Number.isFinite(fdLimit) && fdLimit < NODES * 16 + 1000) {
  console.log(
    `warning: open-file limit ${fdLimit} is below the ~${NODES * 16 + 1000} this run needs; ` +
      `raise it (ulimit -n ${NODES * 16 + 1000}) or lower BENCH_NODES`,
  );
}

const runDir = mkdtempSync(join(tmpdir(), 'bench-embedded-'));
// Node state on a tmpfs when there is one: 1,000 SQLite files syncing to disk
// would measure the disk, not the product.
const stateRoot = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/bench-embedded-') : undefined;
const logFile = join(runDir, 'bench.log');
const { logger, close } = fileLogger(logFile, 'warn');
console.log(runInfo());
const nodeNames = Array.from({ length: NODES }, (_, i) => `node-${i}`);
const waits: number[] = [];

// The sidecars' thread starts here, so all of its CPU time is the run's.
const KUBELET_SHARE = process.env.BENCH_KUBELET_SHARE;
const host = IN_PROCESS
  ? undefined
  : workerHost({
      logFile,
      logLevel: 'warn',
      ...(KUBELET_SHARE !== undefined ? { kubeletShare: Number(KUBELET_SHARE) } : {}),
    });
/** How many nodes' kubelets run in the sidecars' thread. */
const kubeletsThere = host ? nodeNames.filter((_, i) => inShare(i, host.kubeletShare)).length : 0;
const cpuAtStart = process.cpuUsage();
const mainCpuAtStart = process.threadCpuUsage();
const wallAtStart = performance.now();
let t = performance.now();
const cluster = await startEmbeddedCluster({
  nodeNames,
  podSubnet: '10.0.0.0/12',
  runDir,
  ...(stateRoot ? { stateRoot } : {}),
  logger,
  events: false,
  fulfiller: { workers: 16 },
  ...(host ? { host } : {}),
  onRunning: (w) => waits.push(w.waitMs),
});
const setupMs = performance.now() - t;
t = performance.now();
const ready = await cluster.whenReady(120_000);
const readyMs = performance.now() - t;
console.log(
  `set-up: ${NODES} nodes (Node, NNC, sidecar, kubelet) in ${s(setupMs)}; ` +
    `${ready}/${NODES} sidecars ready ${s(readyMs)} later; rss ${mb(process.memoryUsage().rss)}; ` +
    `sidecars ${host ? `and ${kubeletsThere} of the kubelets in a worker thread` : 'on the main thread'}`,
);

const plan = planScenario(
  parseScenario({ name: 'bench', durationSeconds: 60, steps: [{ at: 0, create: PODS }] }),
  nodeNames,
);
// Pods created over plain HTTP: client-node's serializer would double each create's CPU (http-pod-api.ts).
const podApi = httpPodApi(cluster.kc);
const driver = new WorkloadDriver({
  api: podApi,
  plan,
  namespace: WORKLOAD_NAMESPACE,
  concurrency: 64,
});
const { server } = cluster;
const before = server.counters().entries();
t = performance.now();
const driving = driver.run();
const target = 16 * Math.ceil(0.5 + PODS / 16);
let createdMs = 0;
let ipsMs = 0;
let peakRss = 0;
for (;;) {
  await new Promise((r) => setTimeout(r, 100));
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  const created = driver.counters.created + driver.counters.already;
  if (!createdMs && created >= NODES * PODS) createdMs = performance.now() - t;
  if (!ipsMs && waits.length >= NODES * PODS) ipsMs = performance.now() - t;
  if (ipsMs) {
    const nncs = server.objects(
      GROUP,
      NNC_PLURAL,
      DEFAULT_NAMESPACE,
    ) as unknown as NodeNetworkConfig[];
    if (nncs.every((n) => n.spec?.requestedIPCount === target)) break;
  }
  if (performance.now() - t > 300_000) {
    console.log(`gave up after 300 s: ${waits.length} pods have IPs`);
    break;
  }
}
const convergeMs = performance.now() - t;
const converged = ipsMs > 0;
await driving;
const pods = server.objects('', 'pods', WORKLOAD_NAMESPACE) as PodSnapshot[];
const nncs = server.objects(GROUP, NNC_PLURAL, DEFAULT_NAMESPACE) as unknown as NodeNetworkConfig[];
const violations = checkClusterInvariants(pods, nncs);
const w = waitStats(waits);
const after = requestsByVerb(server.counters().entries());
const prior = requestsByVerb(before);
const delta = Object.fromEntries(
  Object.entries(after).map(([verb, n]) => [verb, n - (prior[verb] ?? 0)]),
);
// Watch re-opens per node and minute (issue 39: one-minute bookmarks must
// not turn into a watch request every 30 s per watch).
const watches = watchRequests(
  watchRequestCounts(before),
  watchRequestCounts(server.counters().entries()),
  NODES,
  convergeMs / 1000,
);
const mem = process.memoryUsage();
console.log(
  `workload: ${NODES} nodes x ${PODS} pods = ${NODES * PODS} pods created in ${s(createdMs)}, ` +
    `all Running with an IP in ${s(ipsMs)}, every NNC at target ${target} in ${s(convergeMs)}`,
);
console.log(
  `pod wait p50 ${w.p50Ms} ms, p95 ${w.p95Ms} ms, p99 ${w.p99Ms} ms; ` +
    `invariant violations ${violations.length}; API requests during the workload ${JSON.stringify(delta)}`,
);
console.log(
  watchRequestsLine(watches).trim().replace('during the scenario', 'during the workload'),
);
console.log(
  `memory: rss ${mb(mem.rss)} (peak ${mb(peakRss)}), heap ${mb(mem.heapUsed)}; ` +
    `per node ~${Math.round(mem.rss / NODES / 1024)} KiB rss`,
);
const totalMs = setupMs + readyMs + convergeMs;
// CPU time of every thread (user + system) over the wall time: how many cores
// the run kept busy, a figure the machine's other load changes less than time.
const cpu = process.cpuUsage(cpuAtStart);
const cpuMs = (cpu.user + cpu.system) / 1000;
const wallMs = performance.now() - wallAtStart;
// Each thread's share: the one near its wall time is the one that sets the pace.
const mainCpu = process.threadCpuUsage(mainCpuAtStart);
const mainCpuMs = (mainCpu.user + mainCpu.system) / 1000;
const sidecarCpuMs = (await host?.threadCpuMs()) ?? 0;
const pct = (ms: number) => `${Math.round((100 * ms) / wallMs)} %`;
console.log(
  `cpu: ${s(cpuMs)} over ${s(wallMs)} of wall time (set-up to convergence) = ${(cpuMs / wallMs).toFixed(2)} cores busy; ` +
    `main thread (API server, fulfiller, ${host ? `${NODES - kubeletsThere} of the ` : ''}kubelets, workload) ${s(mainCpuMs)} (${pct(mainCpuMs)})` +
    (host
      ? `, sidecars' thread (and ${kubeletsThere} kubelets) ${s(sidecarCpuMs)} (${pct(sidecarCpuMs)})`
      : '') +
    `, the rest (GC and other V8 and libuv threads) ${s(cpuMs - mainCpuMs - sidecarCpuMs)}`,
);
console.log(
  againstGoal(
    `${NODES} nodes x ${PODS} pods: set up and converged in ${s(totalMs)} with ${violations.length} violations` +
      (converged ? '' : ' (did not converge)'),
    NODES >= 1000 && PODS >= 30 && converged && totalMs < GOAL_MS && violations.length === 0,
    '1,000 nodes x 30 pods in < 30 s on two cores, 0 violations',
  ),
);
console.log(
  JSON.stringify({
    bench: 'embedded',
    nodes: NODES,
    podsPerNode: PODS,
    setupMs: Math.round(setupMs),
    readyMs: Math.round(readyMs),
    allIpsMs: Math.round(ipsMs),
    convergeMs: Math.round(convergeMs),
    totalMs: Math.round(totalMs),
    cpuMs: Math.round(cpuMs),
    mainThreadCpuMs: Math.round(mainCpuMs),
    sidecarThreadCpuMs: Math.round(sidecarCpuMs),
    sidecars: IN_PROCESS ? 'main thread' : 'worker thread',
    podWaitP50Ms: w.p50Ms,
    podWaitP99Ms: w.p99Ms,
    violations: violations.length,
    rssMiB: Math.round(mem.rss / 2 ** 20),
    peakRssMiB: Math.round(peakRss / 2 ** 20),
    heapMiB: Math.round(mem.heapUsed / 2 ** 20),
  }),
);
t = performance.now();
podApi.close();
await cluster.stop();
await close();
if (!process.env.KEEP_RUN_DIR) rmSync(runDir, { recursive: true, force: true });
else console.log(`run dir kept: ${runDir}`);
if (stateRoot) rmSync(stateRoot, { recursive: true, force: true });
console.log(`shutdown: ${s(performance.now() - t)}`);
setTimeout(() => process.exit(0), 500).unref();
