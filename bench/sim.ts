// Embedded-simulation figures for the pieces in src/sim: planning a 1,000-node
// workload, the simulated kubelets getting 1,000 × 30 pods their IPs over
// loopback HTTP (one fake CNS endpoint per 100 nodes), the invariant check and
// report over a cluster of that size. Run: node bench/sim.ts
// (BENCH_NODES and BENCH_PODS change the size.)
import type { V1Pod } from '@kubernetes/client-node';
import { performance } from 'node:perf_hooks';
import type { NodeNetworkConfig } from '../src/nnc/types.ts';
import { checkClusterInvariants } from '../src/sim/invariants.ts';
import { httpCniClient } from '../harness/kubelet/cni.ts';
import { SimKubelet, type PodStatusWriter } from '../harness/kubelet/kubelet.ts';
import { buildReport, renderReport } from '../src/sim/report/report.ts';
import { clusterSample } from '../src/sim/report/sample.ts';
import { planScenario } from '../harness/workload/plan.ts';
import { parseScenario } from '../harness/workload/scenario.ts';
import { startFakeCns, type FakeCns } from '../test/kubelet/fake-cns.ts';

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const PODS = Number(process.env.BENCH_PODS ?? 30);
const NODES_PER_CNS = 100;
const mb = (n: number) => `${Math.round(n / 1024 / 1024)} MB`;

const nodeNames = Array.from({ length: NODES }, (_, i) => `node-${i}`);
let t = performance.now();
const plan = planScenario(
  parseScenario({
    name: 'bench',
    durationSeconds: 60,
    steps: [
      { at: 0, create: PODS, over: 10 },
      { at: 30, complete: Math.floor(PODS / 3) },
      { at: 40, delete: 'all' },
    ],
  }),
  nodeNames,
);
console.log(
  `plan: ${NODES} nodes, ${plan.actions.length} actions in ${(performance.now() - t).toFixed(0)} ms`,
);

// Kubelets: every pod of every node asks its node's CNS endpoint for an IP.
const servers: FakeCns[] = [];
for (let s = 0; s < Math.ceil(NODES / NODES_PER_CNS); s += 1) {
  const ips = Array.from(
    { length: NODES_PER_CNS * PODS },
    (_, i) => `10.${s}.${i >> 8}.${i & 255}`,
  );
  servers.push(await startFakeCns(ips));
}
const pods: V1Pod[] = [];
let running = 0;
const writer: PodStatusWriter = {
  async setRunning(pod, ips) {
    pod.status = { phase: 'Running', podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) };
    running += 1;
    return 'ok';
  },
};
const kubelets = nodeNames.map(
  (nodeName, i) =>
    new SimKubelet({
      nodeName,
      cni: httpCniClient(servers[Math.floor(i / NODES_PER_CNS)]!.url),
      writer,
      concurrency: 4,
      backoff: { initialMs: 20, maxMs: 500 },
    }),
);
const heapBefore = process.memoryUsage().heapUsed;
t = performance.now();
nodeNames.forEach((node, n) => {
  for (let p = 0; p < PODS; p += 1) {
    const pod: V1Pod = {
      metadata: { name: `p-${n}-${p}`, namespace: 'default', uid: `u-${n}-${p}` },
      spec: { nodeName: node, containers: [] },
      status: { phase: 'Pending' },
    };
    pods.push(pod);
    kubelets[n]!.onPod(pod);
  }
});
while (running < NODES * PODS) await new Promise((r) => setTimeout(r, 5));
const setupMs = performance.now() - t;
const waits = kubelets.flatMap((k) => k.waits.map((w) => w.waitMs));
console.log(
  `kubelets: ${NODES * PODS} pods Running with an IP over HTTP in ${(setupMs / 1000).toFixed(2)} s ` +
    `(${Math.round((NODES * PODS) / (setupMs / 1000))} pods/s), heap +${mb(process.memoryUsage().heapUsed - heapBefore)}, ` +
    `rss ${mb(process.memoryUsage().rss)}`,
);

// Invariants and the report over the whole cluster.
const nncs: NodeNetworkConfig[] = nodeNames.map((name, n) => ({
  metadata: { name },
  spec: { requestedIPCount: PODS + 16, ipsNotInUse: [] },
  status: {
    networkContainers: [
      {
        id: `nc-${n}`,
        ipAssignments: pods
          .filter((p) => p.spec!.nodeName === name)
          .map((p) => ({ name: p.status!.podIP!, ip: p.status!.podIP! })),
      },
    ],
  },
}));
t = performance.now();
const violations = checkClusterInvariants(pods, nncs);
console.log(
  `invariants: ${pods.length} pods, ${nncs.length} NNCs checked in ${(performance.now() - t).toFixed(0)} ms, ${violations.length} violations`,
);
t = performance.now();
const samples = Array.from({ length: 120 }, (_, i) => clusterSample(i, pods, nncs));
const report = buildReport({
  scenario: 'bench',
  nodes: NODES,
  durationSeconds: 120,
  podWaitsMs: waits,
  nncWrites: 0,
  samples,
  apiRequestsByVerb: {},
});
renderReport(report);
console.log(
  `report: 120 samples + wait percentiles of ${waits.length} pods in ${(performance.now() - t).toFixed(0)} ms ` +
    `(p50 ${report.podWait.p50Ms} ms, p99 ${report.podWait.p99Ms} ms)`,
);

await Promise.all(kubelets.map((k) => k.stop()));
await Promise.all(servers.map((s) => s.close()));
