// Benchmark of the real sidecar process against the local API server:
// - demand change → NNC write latency: a pod is created and the time until
//   the NNC watch shows the new requestedIPCount is measured (scaler batch 1,
//   threshold 0, so every pod moves the target by one; samples are spaced
//   beyond the 500 ms demand throttle, so each rides its leading edge);
// - the sidecar's resident memory with 250 pods on the node.
// Run: node bench/sidecar.ts [samples]   (prints its figures)
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startApiServer } from '../src/apiserver/server.ts';

const SAMPLES = Number(process.argv[2] ?? 40);
const PODS = 250;
const NODE = 'bench-node';
const NS = 'kube-system';
const BIN = fileURLToPath(new URL('../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../manifests/crds/', import.meta.url));
const NNC = {
  group: 'acn.azure.com',
  version: 'v1alpha',
  namespace: NS,
  plural: 'nodenetworkconfigs',
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

const server = await startApiServer({ crdsDir: CRDS });
const kc = new KubeConfig();
kc.loadFromFile(server.kubeconfigPath);
const core = kc.makeApiClient(CoreV1Api);
const objects = kc.makeApiClient(CustomObjectsApi);
const stateDir = mkdtempSync(join(tmpdir(), 'bench-sidecar-'));

await objects.createNamespacedCustomObject({
  ...NNC,
  body: {
    apiVersion: 'acn.azure.com/v1alpha',
    kind: 'NodeNetworkConfig',
    metadata: { name: NODE, namespace: NS },
    spec: { requestedIPCount: 0 },
  },
});
const nnc = (await objects.getNamespacedCustomObject({ ...NNC, name: NODE })) as object;
await objects.replaceNamespacedCustomObjectStatus({
  ...NNC,
  name: NODE,
  body: {
    ...nnc,
    status: {
      scaler: {
        batchSize: 1,
        requestThresholdPercent: 0,
        releaseThresholdPercent: 150,
        maxIPCount: 250,
      },
      networkContainers: [
        {
          id: 'nc-bench',
          assignmentMode: 'dynamic',
          subnetName: 'bench',
          subnetAddressSpace: '10.20.0.0/16',
          defaultGateway: '10.20.0.1',
          primaryIP: '10.20.255.1',
          ipAssignments: Array.from({ length: 16 }, (_, i) => ({
            name: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
            ip: `10.20.0.${i + 2}`,
          })),
        },
      ],
    },
  },
});

// Our own watch on the NNC: when each requestedIPCount was first seen.
const seen = new Map<number, number>();
const watchAbort = new AbortController();
void (async () => {
  const res = await fetch(
    `${server.url}/apis/acn.azure.com/v1alpha/namespaces/${NS}/nodenetworkconfigs?watch=1&fieldSelector=metadata.name%3D${NODE}`,
    { signal: watchAbort.signal },
  );
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, at);
        buf = buf.slice(at + 1);
        const ev = JSON.parse(line) as { object?: { spec?: { requestedIPCount?: number } } };
        const r = ev.object?.spec?.requestedIPCount;
        if (typeof r === 'number' && !seen.has(r)) seen.set(r, performance.now());
      }
    }
  } catch {
    // aborted at the end
  }
})();

const child = spawn(
  BIN,
  [
    'sidecar',
    '--node-name',
    NODE,
    '--kubeconfig',
    server.kubeconfigPath,
    '--state-dir',
    stateDir,
    '--listen',
    '127.0.0.1:0',
  ],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODENAME: '', KUBECONFIG: '' } },
);
child.stdout.resume(); // JSON logs, drained as a log collector would
const pid = child.pid as number;

const waitSeen = async (n: number, timeoutMs = 10_000): Promise<number> => {
  const until = performance.now() + timeoutMs;
  while (!seen.has(n)) {
    if (performance.now() > until) throw new Error(`request ${n} never written`);
    await sleep(2);
  }
  return seen.get(n) as number;
};

let pods = 0;
const createPod = async (): Promise<void> => {
  const name = `bench-${pods++}`;
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, namespace: 'default' },
      spec: { nodeName: NODE, containers: [{ name: 'app', image: 'registry.local/app:1' }] },
    },
  });
};

// Ready: the first reconcile writes request 0 → nothing; one pod → 1.
await sleep(1500);
const latencies: number[] = [];
for (let i = 0; i < SAMPLES; i++) {
  const t0 = performance.now();
  await createPod();
  const t1 = await waitSeen(pods);
  latencies.push(t1 - t0);
  await sleep(600);
}
// Ramp to 250 pods (throttled demand, trailing edge) and let it settle.
while (pods < PODS) await createPod();
await waitSeen(PODS, 20_000);
await sleep(2000);
const rss = rssMiB(pid);
const sorted = [...latencies].sort((a, b) => a - b);

child.kill('SIGTERM');
const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
watchAbort.abort();
await server.close();
rmSync(stateDir, { recursive: true, force: true });

console.log(`sidecar: demand change -> NNC write latency over ${latencies.length} samples`);
console.log(
  `  p50 ${percentile(sorted, 50).toFixed(1)} ms   p99 ${percentile(sorted, 99).toFixed(1)} ms   max ${sorted.at(-1)?.toFixed(1)} ms`,
);
console.log(`sidecar: RSS with ${PODS} pods on the node: ${rss.toFixed(1)} MiB`);
console.log(`sidecar: exit code after SIGTERM: ${code}`);
