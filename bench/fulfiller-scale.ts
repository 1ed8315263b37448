// The fulfiller's own cost at 5,000 nodes (the sizing figures of its
// Deployment): the local API server runs as a process of its own
// (`bin/pool-monitor apiserver`), so this process is the fulfiller (CIDR
// backend, 8 workers, no minimum interval per node) plus the few lines that
// seed the cluster.
// - memory per NNC: heap and RSS the fulfiller holds once every NNC is
//   filled, over what the process held before it started, per node;
// - each resync with nothing to do: wall time, CPU (user + system) and the
//   heap after it, RESYNCS times (default 5): the heap must not grow.
// - the product's process (`bin/pool-monitor fulfiller`) restarted over the
//   filled NNCs: its RSS and peak once it leads with nothing to do.
// Goals: a resync over 5,000 NNCs in at most 5 s (docs/design/fulfiller.md#shape)
// and 1 s of CPU (under 2% of a core at the 60 s interval); at most 16 KiB of
// heap per NNC; no growth over resyncs; the process's peak within three
// quarters of its Deployment's memory limit (manifests/fulfiller/deployment.yaml,
// 768Mi), so 5,000 nodes fit with room.
// `node bench/fulfiller-scale.ts [nodes] [ips]`; RESYNCS=n.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import { inBatches } from '../harness/embedded/cluster.ts';
import { makeFulfillerConfig } from '../src/fulfiller/config.ts';
import { startFulfiller } from '../src/fulfiller/run.ts';
import type { RunningFulfiller } from '../src/fulfiller/run.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import { silentLogger } from '../src/log/logger.ts';
import { againstGoal, runInfo } from './run-info.ts';
import { NNC, nncObject } from '../test/support/test-cluster.ts';

const NODES = Number(process.argv[2] ?? 5000);
const IPS = Number(process.argv[3] ?? 16);
const RESYNCS = Number(process.env.RESYNCS ?? 5);
const GOAL = { resyncMs: 5000, resyncCpuMs: 1000, heapPerNncKiB: 16, rssMiB: 576, growthPct: 5 };
const BIN = fileURLToPath(new URL('../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../manifests/crds/', import.meta.url));
const MiB = 2 ** 20;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Heap and RSS after a full collection: what is really held. */
function held(): { heap: number; rss: number } {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The API server as a process; resolves with its kubeconfig once it listens. */
async function apiServerProcess(): Promise<{ kubeconfig: string; stop: () => Promise<void> }> {
  const child = spawn(BIN, ['apiserver', '--crds', CRDS], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const kubeconfig = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.on('exit', (code) => reject(new Error(`apiserver exited with ${code}`)));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      const path = /"msg":"api server listening"[^\n]*"kubeconfig":"([^"]+)"/.exec(buf)?.[1];
      if (path) {
        buf = '';
        resolve(path);
      } else if (buf.length > 1e6) buf = buf.slice(-1e5);
    });
  });
  child.stdout.resume();
  return {
    kubeconfig,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** /proc/PID/status fields in MiB. */
function statusMiB(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
}
/** CPU seconds (user + system) of a process: fields 14 and 15 of /proc/PID/stat. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / 100) * 1000;
}
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * The product's process (`bin/pool-monitor fulfiller`, its own flags and
 * defaults) over the filled NNCs: its RSS once it leads and has looked at
 * every node (nothing to do), as its Deployment would see it.
 */
async function fulfillerProcess(kubeconfig: string): Promise<{
  startMs: number;
  rss: number;
  anon: number;
  file: number;
  hwm: number;
  quietCpuMs: number;
}> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(
    BIN,
    [
      'fulfiller',
      '--kubeconfig',
      kubeconfig,
      '--subnet',
      '10.0.0.0/12',
      '--leader-elect=false',
      '--listen',
      `127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  // The new term first moves every NNC past the previous term's writes
  // (docs/decisions/0022); quiet means after that.
  let fenced = false;
  let tail = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-4096);
    if (tail.includes('"msg":"previous term fenced"')) fenced = true;
  });
  const pid = child.pid as number;
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    // the sum over the metric's labels (nodes is by state)
    const samples = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))];
    return samples.length === 0 ? NaN : samples.reduce((n, m) => n + Number(m[1]), 0);
  };
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const settled = await (async () =>
      fenced &&
      (await metric('pool_monitor_fulfiller_nodes')) === NODES &&
      (await metric('pool_monitor_fulfiller_leader')) === 1 &&
      (await metric('pool_monitor_fulfiller_queue_depth')) === 0)().catch(() => false);
    if (settled) break;
    if (performance.now() - t0 > 300_000) throw new Error('the fulfiller process never settled');
  }
  const startMs = performance.now() - t0;
  const c0 = processCpuMs(pid);
  await new Promise((r) => setTimeout(r, 10_000));
  const quietCpuMs = (processCpuMs(pid) - c0) / 10;
  const figures = {
    startMs,
    rss: statusMiB(pid, 'VmRSS'),
    anon: statusMiB(pid, 'RssAnon'),
    file: statusMiB(pid, 'RssFile'),
    hwm: statusMiB(pid, 'VmHWM'),
    quietCpuMs,
  };
  child.kill('SIGTERM');
  await exited;
  return figures;
}

async function idle(r: RunningFulfiller): Promise<void> {
  for (;;) {
    await r.fulfiller.whenIdle();
    const s = r.fulfiller.stats();
    if (s.pending === 0 && s.active === 0) return;
  }
}

const api = await apiServerProcess();
const { kc, connections } = loadKubeConfig({ kubeconfig: api.kubeconfig });
const objects = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);
const names = Array.from({ length: NODES }, (_, i) => `node-${i}`);
await inBatches(names, 64, (name) => core.createNode({ body: { metadata: { name } } }));
await inBatches(names, 64, (name) =>
  objects.createNamespacedCustomObject({
    ...NNC,
    body: nncObject(name, { requestedIPCount: IPS }),
  }),
);

const before = held();
const fulfiller = await startFulfiller({
  kc,
  config: makeFulfillerConfig({ subnet: '10.0.0.0/12', minIntervalMs: 0 }),
  logger: silentLogger(),
  events: false,
  defaultMetrics: false,
});
await fulfiller.whenSynced();
const fillStart = performance.now();
while (fulfiller.fulfiller.stats().allocated < NODES * IPS) {
  await idle(fulfiller);
  await new Promise((r) => setTimeout(r, 20));
}
const fillMs = performance.now() - fillStart;
const filled = held();
const heapPerNncKiB = (filled.heap - before.heap) / NODES / 1024;
const rssPerNncKiB = (filled.rss - before.rss) / NODES / 1024;

const resyncs: { ms: number; cpuMs: number; heap: number; rss: number }[] = [];
for (let i = 0; i < RESYNCS; i++) {
  const t0 = performance.now();
  const c0 = cpuMs();
  fulfiller.fulfiller.resync();
  await idle(fulfiller);
  const ms = performance.now() - t0;
  const cpu = cpuMs() - c0;
  resyncs.push({ ms, cpuMs: cpu, ...held() });
}
const writes = fulfiller.fulfiller.stats().writes;
await fulfiller.stop();
await connections.destroy();
const product = await fulfillerProcess(api.kubeconfig);
await api.stop();

const maxMs = Math.max(...resyncs.map((r) => r.ms));
const maxCpu = Math.max(...resyncs.map((r) => r.cpuMs));
const maxRss = Math.max(filled.rss, ...resyncs.map((r) => r.rss)) / MiB;
const first = resyncs[0]?.heap ?? filled.heap;
const last = resyncs.at(-1)?.heap ?? filled.heap;
const growthPct = ((last - first) / first) * 100;
const list = (f: (r: (typeof resyncs)[number]) => string): string => resyncs.map(f).join(', ');
console.log(runInfo());
console.log(
  `fulfiller at ${NODES} nodes x ${IPS} IPs (CIDR backend, API server in its own process): ` +
    `filled in ${(fillMs / 1000).toFixed(1)} s, ${writes} status writes`,
);
console.log(
  againstGoal(
    `fulfiller: heap per NNC ${heapPerNncKiB.toFixed(1)} KiB, RSS per NNC ${rssPerNncKiB.toFixed(1)} KiB ` +
      `(heap ${(before.heap / MiB).toFixed(0)} -> ${(filled.heap / MiB).toFixed(0)} MiB, ` +
      `RSS ${(before.rss / MiB).toFixed(0)} -> ${(filled.rss / MiB).toFixed(0)} MiB)`,
    heapPerNncKiB <= GOAL.heapPerNncKiB,
    `<= ${GOAL.heapPerNncKiB} KiB of heap per NNC`,
  ),
);
console.log(
  `fulfiller: this process (fulfiller + seeding client) RSS at most ${maxRss.toFixed(0)} MiB over fill and resyncs`,
);
console.log(
  againstGoal(
    `fulfiller process (bin/pool-monitor fulfiller) at ${NODES} nodes, leading, nothing to do: ` +
      `RSS ${product.rss.toFixed(0)} MiB (anon ${product.anon.toFixed(0)}, file ${product.file.toFixed(0)}), ` +
      `VmHWM ${product.hwm.toFixed(0)} MiB; leading, every NNC fenced and looked at ` +
      `${(product.startMs / 1000).toFixed(1)} s after start, then ${product.quietCpuMs.toFixed(0)}m CPU while quiet`,
    product.hwm <= GOAL.rssMiB,
    `peak <= ${GOAL.rssMiB} MiB, 3/4 of the 768Mi limit`,
  ),
);
console.log(
  againstGoal(
    `fulfiller: resync with nothing to do, wall ${list((r) => r.ms.toFixed(0))} ms`,
    maxMs <= GOAL.resyncMs,
    `<= ${GOAL.resyncMs} ms`,
  ),
);
console.log(
  againstGoal(
    `fulfiller: CPU per resync ${list((r) => r.cpuMs.toFixed(0))} ms`,
    maxCpu <= GOAL.resyncCpuMs,
    `<= ${GOAL.resyncCpuMs} ms`,
  ),
);
console.log(
  againstGoal(
    `fulfiller: heap after each resync ${list((r) => (r.heap / MiB).toFixed(1))} MiB ` +
      `(${growthPct >= 0 ? '+' : ''}${growthPct.toFixed(1)}% first to last)`,
    growthPct <= GOAL.growthPct,
    `no growth (<= ${GOAL.growthPct}%)`,
  ),
);
