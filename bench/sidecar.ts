// Benchmark of real sidecar processes against the local API server (its own
// process too: `pool-monitor apiserver`), over real HTTP:
// - single pod: a pod is created and the time until the NNC watch shows the
//   new requestedIPCount is measured (scaler batch 1, threshold 0, so every
//   pod moves the target by one; samples are spaced beyond the 500 ms write
//   window, so each is an isolated change);
// - multi-pod: after a quiet second, 1–16 pods are created together on a
//   second node (batch 16, threshold 50) so that one of them crosses a batch
//   boundary; the time from the first create to the NNC showing the new
//   request is measured (the crossing pod may be any of the group);
// - the sidecar's resident memory with 250 pods on the node.
// Run: node bench/sidecar.ts [single-pod samples] [multi-pod samples]
// (BENCH_VERBOSE=1 prints every multi-pod sample, and the sidecar's log for slow ones).
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from '../src/scaling/advise/percentile.ts';
import { nncPath } from '../src/nnc/types.ts';
import { NNC, NS, nncObject } from '../test/support/test-cluster.ts';

const SAMPLES = Number(process.argv[2] ?? 40);
const GROUP_SAMPLES = Number(process.argv[3] ?? 32);
const PODS = 250;
const SINGLE = 'bench-node';
const MULTI = 'bench-node-multi';
const BIN = fileURLToPath(new URL('../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../manifests/crds/', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentile, as the reports compute it (NaN for no samples). */
const pct = (values: number[], p: number): number => percentile(values, p) ?? NaN;

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** BENCH_VERBOSE=1: each child's log lines, to show what a slow sample did. */
const logLines = new Map<ChildProcess, string[]>();
/** Every child is killed when the bench exits, whichever way it does. */
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

// The API server runs in its own process, as a real one would: the bench's
// own work (creating pods, watching the NNCs) then does not delay it.
const workDir = mkdtempSync(join(tmpdir(), 'bench-sidecar-'));
const apiserver = spawn(
  BIN,
  ['apiserver', '--port', '0', '--crds', CRDS, '--kubeconfig', join(workDir, 'kubeconfig')],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
children.push(apiserver);
const server = {
  ...(await logged<{ url: string; kubeconfig: string }>(apiserver, 'api server listening')),
  close: () => stopChild(apiserver),
};
const kc = new KubeConfig();
kc.loadFromFile(server.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const objects = kc.makeApiClient(CustomObjectsApi);
const stateDirs: string[] = [workDir];

async function createNnc(
  node: string,
  scaler: { batchSize: number; requestThresholdPercent: number },
  block: number,
): Promise<void> {
  await objects.createNamespacedCustomObject({
    ...NNC,
    body: nncObject(node, { requestedIPCount: 0 }),
  });
  const nnc = (await objects.getNamespacedCustomObject({ ...NNC, name: node })) as object;
  await objects.replaceNamespacedCustomObjectStatus({
    ...NNC,
    name: node,
    body: {
      ...nnc,
      status: {
        scaler: { ...scaler, releaseThresholdPercent: 150, maxIPCount: 250 },
        networkContainers: [
          {
            id: `nc-${node}`,
            assignmentMode: 'dynamic',
            subnetName: 'bench',
            subnetAddressSpace: '10.20.0.0/16',
            defaultGateway: '10.20.0.1',
            primaryIP: `10.20.255.${block}`,
            ipAssignments: Array.from({ length: 16 }, (_, i) => ({
              name: `00000000-0000-4000-800${block}-${i.toString(16).padStart(12, '0')}`,
              ip: `10.20.${block}.${i + 2}`,
            })),
          },
        ],
      },
    },
  });
}

/** Our own watch on a node's NNC: when each requestedIPCount was first seen. */
function watchRequests(node: string, abort: AbortSignal): Map<number, number> {
  const seen = new Map<number, number>();
  void (async () => {
    const res = await fetch(
      `${server.url}${nncPath(NS)}?watch=1&fieldSelector=metadata.name%3D${node}`,
      { signal: abort },
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
          if (typeof r === 'number') seen.set(r, performance.now());
        }
      }
    } catch {
      // aborted at the end
    }
  })();
  return seen;
}

/** The first JSON log line of `child` whose msg is `msg`; later lines are drained. */
function logged<T>(child: ChildProcess, msg: string): Promise<T> {
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let at: number;
      while ((at = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, at);
        buf = buf.slice(at + 1);
        if (process.env.BENCH_VERBOSE) logLines.get(child)?.push(line);
        if (line.includes(`"msg":"${msg}"`)) resolve(JSON.parse(line) as T);
      }
    });
    child.on('exit', () => reject(new Error(`exited before logging "${msg}"`)));
  });
}

function stopChild(child: ChildProcess): Promise<number | null> {
  child.kill('SIGTERM');
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

async function ready(child: ChildProcess): Promise<void> {
  const url = `http://${(await logged<{ listen: string }>(child, 'sidecar started')).listen}`;
  for (;;) {
    if ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) return;
    await sleep(20);
  }
}

function startSidecar(node: string): ChildProcess {
  const stateDir = mkdtempSync(join(tmpdir(), 'bench-sidecar-'));
  stateDirs.push(stateDir);
  const child = spawn(
    BIN,
    [
      'sidecar',
      '--node-name',
      node,
      '--kubeconfig',
      server.kubeconfig,
      '--state-dir',
      stateDir,
      '--listen',
      '127.0.0.1:0',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODENAME: '', KUBECONFIG: '' } },
  );
  children.push(child);
  return child; // its JSON logs are drained by listening(), as a log collector would
}

const waitSeen = async (
  seen: Map<number, number>,
  n: number,
  after = 0,
  timeoutMs = 10_000,
): Promise<number> => {
  const until = performance.now() + timeoutMs;
  while (!((seen.get(n) ?? -1) >= after)) {
    if (performance.now() > until) throw new Error(`request ${n} never written`);
    await sleep(1);
  }
  return seen.get(n) as number;
};

// Pods are created with plain fetch over keep-alive connections, as a
// controller would: client-node opens a connection per request here, which
// would put the bench client's cost into the figures.
let podCount = 0;
const createPod = async (node: string): Promise<string> => {
  const name = `bench-${podCount++}`;
  const res = await fetch(`${server.url}/api/v1/namespaces/default/pods`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.local/app:1' }] },
    }),
  });
  if (res.status !== 201) throw new Error(`create pod ${name}: HTTP ${res.status}`);
  await res.arrayBuffer();
  return name;
};
const deletePod = (name: string): Promise<unknown> =>
  core.deleteNamespacedPod({ name, namespace: 'default', gracePeriodSeconds: 0 });

await createNnc(SINGLE, { batchSize: 1, requestThresholdPercent: 0 }, 1);
await createNnc(MULTI, { batchSize: 16, requestThresholdPercent: 50 }, 2);
const watchAbort = new AbortController();
const seenSingle = watchRequests(SINGLE, watchAbort.signal);
const seenMulti = watchRequests(MULTI, watchAbort.signal);
const single = startSidecar(SINGLE);
const multi = startSidecar(MULTI);
logLines.set(multi, []);

// Ready (every watch listed, a valid NNC): request 0 is right for no pods.
await Promise.all([ready(single), ready(multi)]);
await sleep(600);

// Single pods.
const latencies: number[] = [];
let singlePods = 0;
for (let i = 0; i < SAMPLES; i++) {
  const t0 = performance.now();
  await createPod(SINGLE);
  singlePods += 1;
  const t1 = await waitSeen(seenSingle, singlePods, t0);
  latencies.push(t1 - t0);
  await sleep(600);
}

// Groups of 1–16 pods crossing the batch boundary at 25 pods (request
// 32 → 48 with batch 16, threshold 50): before each group the node holds D
// pods, 25 − k ≤ D ≤ 24, so the group crosses exactly one boundary.
const groupLatencies: number[] = [];
const multiPods: string[] = [];
while (multiPods.length < 9) multiPods.push(await createPod(MULTI));
await waitSeen(seenMulti, 32);
for (let i = 0; i < GROUP_SAMPLES; i++) {
  const k = 1 + (i % 16);
  const d = 24 - ((i * 5) % k);
  const tDown = performance.now();
  const excess = multiPods.splice(d);
  await Promise.all(excess.map(deletePod));
  while (multiPods.length < d) multiPods.push(await createPod(MULTI));
  await waitSeen(seenMulti, 32, i === 0 ? 0 : tDown); // back at 32 after the deletions
  await sleep(1100); // a quiet second: nothing written for longer than the window
  const t0 = performance.now();
  const wall0 = Date.now();
  multiPods.push(...(await Promise.all(Array.from({ length: k }, () => createPod(MULTI)))));
  const created = performance.now();
  const t1 = await waitSeen(seenMulti, 48, t0);
  groupLatencies.push(t1 - t0);
  if (process.env.BENCH_VERBOSE) {
    console.log(
      `  k=${k} d=${d} created ${(created - t0).toFixed(1)} ms written ${(t1 - t0).toFixed(1)} ms`,
    );
    if (t1 - t0 > 40) {
      for (const l of logLines.get(multi) ?? []) {
        const dt = Date.parse((JSON.parse(l) as { ts: string }).ts) - wall0;
        if (dt >= -5) console.log(`     +${dt} ${l.slice(0, 200)}`);
      }
    }
    logLines.set(multi, []);
  }
  await sleep(100);
}

// Ramp the single-pod node to 250 pods and let it settle.
while (singlePods < PODS) {
  await createPod(SINGLE);
  singlePods += 1;
}
await waitSeen(seenSingle, PODS, 0, 20_000);
await sleep(2000);
const rss = rssMiB(single.pid as number);

const codes = await Promise.all([single, multi].map(stopChild));
watchAbort.abort();
await server.close();
for (const dir of stateDirs) rmSync(dir, { recursive: true, force: true });

const line = (label: string, values: number[]): string => {
  const sorted = [...values].sort((a, b) => a - b);
  return `  ${label.padEnd(28)} p50 ${pct(sorted, 50).toFixed(1)} ms   p99 ${pct(sorted, 99).toFixed(1)} ms   max ${sorted.at(-1)?.toFixed(1)} ms   (${values.length} samples)`;
};
console.log('sidecar: demand change -> NNC write latency');
console.log(line('single pod', latencies));
console.log(line('1-16 pods crossing a batch', groupLatencies));
console.log(`sidecar: RSS with ${PODS} pods on the node: ${rss.toFixed(1)} MiB`);
console.log(`sidecar: exit codes after SIGTERM: ${codes.join(', ')}`);
