// What the sidecar process costs, for the DaemonSet's requests and limits
// (manifests/sidecar/daemonset.yaml quotes these figures): resident memory
// idle (an NNC of 256 IPs, no pods) and with 250 pods on the node, each
// holding an IP from the node API as the CNI asks for them, its peak
// (VmHWM), and CPU while the 250 pods arrive and while the node is quiet.
// The demand-to-write latency is bench/sidecar.ts's; this one also prints it
// for the single-pod case (batch 1, threshold 0) it drives anyway.
// The bench stands in for the fulfiller: each requestedIPCount is met, and
// the IPs listed in ipsNotInUse leave the NNC, so the pods really get IPs.
// After the ramp, pods churn (one deleted and one created with its IP, over
// and over) for CHURN_SECONDS (default 60; an hour: 3600), then the steady
// state is measured: the figure the DaemonSet's memory is sized from.
// The whole measure runs twice in one run, single-stack (one IPv4 network
// container) and dual-stack (an IPv4 and an IPv6 container, each pod
// holding one address of each: docs/design/contracts.md, "Address
// families"), and the dual-stack RSS after churn is compared with the
// single-stack one (goal: within 5 %).
// Run: node bench/sidecar-resources.ts [samples]   (prints its figures)
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from '../src/scaling/advise/percentile.ts';
import { startApiServer } from '../harness/apiserver/server.ts';
import { againstGoal, runInfo } from './run-info.ts';
import { nncPath } from '../src/nnc/types.ts';
import { NNC, NS, nncObject } from '../test/support/test-cluster.ts';

const SAMPLES = Number(process.argv[2] ?? 40);
const CHURN_SECONDS = Number(process.env.CHURN_SECONDS ?? 60);
/** The goal of docs/decisions/0026: RSS with 250 pods, after churn. */
const GOAL_MIB = 100;
/** Dual-stack RSS after churn against single-stack's, in the same run (issue 54). */
const DUAL_GOAL_RATIO = 1.05;
const PODS = 250;
const NODE = 'bench-node';
const BIN = fileURLToPath(new URL('../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../manifests/crds/', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentile, as the reports compute it (NaN for no samples). */
const pct = (values: number[], p: number): number => percentile(values, p) ?? NaN;

function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return kb / 1024;
}
const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS');

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of /proc/PID/stat (11 and 12 after the name).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

type Stack = 'single' | 'dual';

interface NncObject {
  metadata: { resourceVersion?: string };
  spec?: { requestedIPCount?: number; ipsNotInUse?: string[] };
  status?: { networkContainers?: { id: string; ipAssignments?: { name: string; ip: string }[] }[] };
}

/** IP number i of a family: a uuid-shaped id, 10.20.x.y or fd00:20::<hex>. */
const ipOf = (family: 4 | 6, i: number): { name: string; ip: string } => ({
  name: `00000000-0000-4000-800${family}-${i.toString(16).padStart(12, '0')}`,
  ip: family === 4 ? `10.20.${(i + 2) >> 8}.${(i + 2) & 255}` : `fd00:20::${(i + 2).toString(16)}`,
});

/** The dynamic network containers of the bench node: one per family. */
function containers(stack: Stack): object[] {
  const v4 = {
    id: 'nc-bench',
    assignmentMode: 'dynamic',
    subnetName: 'bench',
    subnetAddressSpace: '10.20.0.0/16',
    defaultGateway: '10.20.0.1',
    primaryIP: '10.20.255.1',
    ipAssignments: Array.from({ length: 256 }, (_, i) => ipOf(4, i)),
  };
  if (stack === 'single') return [v4];
  const v6 = {
    id: 'nc-bench-v6',
    assignmentMode: 'dynamic',
    subnetName: 'bench-v6',
    subnetAddressSpace: 'fd00:20::/112',
    defaultGateway: 'fd00:20::1',
    primaryIP: 'fd00:20::ffff',
    ipAssignments: Array.from({ length: 256 }, (_, i) => ipOf(6, i)),
  };
  return [v4, v6];
}

interface Figures {
  stack: Stack;
  latencies: number[];
  idleRss: number;
  rssAfterRamp: number;
  assigned: number;
  /** Addresses each pod got (1 single-stack, 2 dual-stack), the fewest any pod got. */
  perPod: number;
  rss: number;
  rssAnon: number;
  rssFile: number;
  churnRss: number[];
  replaced: number;
  churnFailed: number;
  peakRss: number;
  hwm: number;
  cpuChurn: number;
  cpuRamp: number;
  rampSeconds: number;
  cpuQuiet: number;
  code: number | null;
}

/** One sidecar process, its own API server and state dir: the whole measure. */
async function measure(stack: Stack): Promise<Figures> {
  const server = await startApiServer({ crdsDir: CRDS });
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = kc.makeApiClient(CustomObjectsApi);
  const stateDir = mkdtempSync(join(tmpdir(), `bench-sidecar-resources-${stack}-`));

  // The fulfiller's part: each family's container holds requestedIPCount
  // IPs, none of them one the sidecar gave up (ipsNotInUse); new IPs get new
  // ids and addresses.
  let nextIp = 256;
  let fulfil = Promise.resolve();
  async function fulfilSpec(seenNnc: NncObject): Promise<void> {
    const want = seenNnc.spec?.requestedIPCount;
    if (typeof want !== 'number') return;
    const nnc = (await objects.getNamespacedCustomObject({ ...NNC, name: NODE })) as NncObject;
    const gone = new Set(nnc.spec?.ipsNotInUse ?? []);
    let changed = false;
    for (const nc of nnc.status?.networkContainers ?? []) {
      if (!nc.ipAssignments) return;
      const family = nc.id.endsWith('-v6') ? 6 : 4;
      const kept = nc.ipAssignments.filter((a) => !gone.has(a.name));
      while (kept.length < want) kept.push(ipOf(family, nextIp++));
      if (kept.length !== nc.ipAssignments.length || gone.size > 0) changed = true;
      nc.ipAssignments = kept;
    }
    if (!changed) return;
    await objects
      .replaceNamespacedCustomObjectStatus({ ...NNC, name: NODE, body: nnc })
      .catch(() => {
        // a conflict: the next watch event fulfils again
      });
  }

  // The Node the pods are bound to: without it the API server's pod GC
  // deletes them as orphans 40 s in, as kube-controller-manager does.
  await core.createNode({ body: { metadata: { name: NODE } } });
  await objects.createNamespacedCustomObject({
    ...NNC,
    body: nncObject(NODE, { requestedIPCount: 0 }),
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
        networkContainers: containers(stack),
      },
    },
  });

  // Our own watch on the NNC: when each requestedIPCount was first seen.
  const seen = new Map<number, number>();
  const watchAbort = new AbortController();
  void (async () => {
    const res = await fetch(
      `${server.url}${nncPath(NS)}?watch=1&fieldSelector=metadata.name%3D${NODE}`,
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
          const ev = JSON.parse(line) as { object?: NncObject };
          const r = ev.object?.spec?.requestedIPCount;
          if (typeof r === 'number' && !seen.has(r)) seen.set(r, performance.now());
          if (ev.object) fulfil = fulfil.then(() => fulfilSpec(ev.object as NncObject));
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
  // JSON logs, drained as a log collector would; the node API's port from them.
  let nodeApi = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const port = /"msg":"node api listening"[^\n]*"port":(\d+)/.exec(chunk)?.[1];
    if (port) nodeApi = `http://127.0.0.1:${port}`;
  });
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
  const idleRss = rssMiB(pid);
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    await createPod();
    const t1 = await waitSeen(pods);
    latencies.push(t1 - t0);
    await sleep(600);
  }
  // Ramp to 250 pods (throttled demand, trailing edge), each getting its IP
  // from the node API as the CNI would, and let it settle.
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(pid))), 100);
  const cpuBeforeRamp = cpuSeconds(pid);
  const rampStart = performance.now();
  while (pods < PODS) await createPod();
  await waitSeen(PODS, 20_000);
  /** The CNI's call for pod i: the addresses it got (none when refused). */
  const ipCall = async (what: 'request' | 'release', i: number): Promise<number> => {
    const res = await fetch(`${nodeApi}/network/${what}ipconfigs`, {
      method: 'POST',
      body: JSON.stringify({
        podInterfaceID: `bench-${i}-eth0`,
        infraContainerID: `bench-${i}`,
        orchestratorContext: { PodName: `bench-${i}`, PodNamespace: 'default' },
        desiredIPAddresses: [],
      }),
    });
    const body = (await res.json()) as {
      podIPInfo?: unknown[];
      response?: { ReturnCode?: number };
    };
    return body.response?.ReturnCode === 0 ? (body.podIPInfo?.length ?? 0) : 0;
  };
  const want = stack === 'dual' ? 2 : 1;
  let perPod = want;
  /** Asks until the pod has its addresses (the fulfiller's IPs may still be on their way). */
  const requestIp = async (i: number): Promise<boolean> => {
    for (let attempt = 0; attempt < 100; attempt++) {
      const got = await ipCall('request', i);
      if (got > 0) {
        perPod = Math.min(perPod, got);
        return true;
      }
      await sleep(50);
    }
    return false;
  };
  let assigned = 0;
  for (let i = 0; i < PODS; i++) if (await requestIp(i)) assigned += 1;
  const rampSeconds = (performance.now() - rampStart) / 1000;
  const cpuRamp = cpuSeconds(pid) - cpuBeforeRamp;
  await sleep(2000);
  const rssAfterRamp = rssMiB(pid);
  // Churn: the oldest pod goes (its IP released, the pod deleted), a new one
  // comes and gets an IP, as long as CHURN_SECONDS lasts; 250 pods throughout.
  const live: number[] = Array.from({ length: PODS }, (_, i) => i);
  const cpuBeforeChurn = cpuSeconds(pid);
  const churnEnd = performance.now() + CHURN_SECONDS * 1000;
  let replaced = 0;
  let churnFailed = 0;
  /** RSS at each tenth of the churn: where an hour's growth comes, if it comes. */
  const churnRss: number[] = [];
  const tenth = setInterval(() => churnRss.push(rssMiB(pid)), (CHURN_SECONDS * 1000) / 10);
  while (performance.now() < churnEnd) {
    const old = live.shift() as number;
    await ipCall('release', old);
    await core.deleteNamespacedPod({
      namespace: 'default',
      name: `bench-${old}`,
      gracePeriodSeconds: 0,
    });
    const fresh = pods;
    await createPod();
    live.push(fresh);
    if (await requestIp(fresh)) replaced += 1;
    else churnFailed += 1;
  }
  clearInterval(tenth);
  const cpuChurn = cpuSeconds(pid) - cpuBeforeChurn;
  await sleep(2000);
  const rss = rssMiB(pid);
  // Anonymous memory (heaps, malloc) and file-backed pages (the node binary's
  // code and data mapped in: clean, shared, reclaimable under the limit).
  const rssAnon = statusMiB(pid, 'RssAnon');
  const rssFile = statusMiB(pid, 'RssFile');
  // Quiet: nothing changes for 10 s (watches idle, the 60 s tick may fire).
  const cpuBeforeQuiet = cpuSeconds(pid);
  await sleep(10_000);
  const cpuQuiet = (cpuSeconds(pid) - cpuBeforeQuiet) / 10;
  clearInterval(sampler);
  const hwm = statusMiB(pid, 'VmHWM');

  child.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  watchAbort.abort();
  await server.close();
  rmSync(stateDir, { recursive: true, force: true });
  return {
    stack,
    latencies,
    idleRss,
    rssAfterRamp,
    assigned,
    perPod: perPod === want ? want : perPod,
    rss,
    rssAnon,
    rssFile,
    churnRss,
    replaced,
    churnFailed,
    peakRss,
    hwm,
    cpuChurn,
    cpuRamp,
    rampSeconds,
    cpuQuiet,
    code,
  };
}

function report(f: Figures): void {
  const sorted = [...f.latencies].sort((a, b) => a - b);
  const who = `sidecar (${f.stack}-stack)`;
  const ips = f.stack === 'dual' ? 'an IPv4 and an IPv6 address' : 'an IP';
  console.log(`${who}: demand change -> NNC write latency over ${f.latencies.length} samples`);
  console.log(
    `  p50 ${pct(sorted, 50).toFixed(1)} ms   p99 ${pct(sorted, 99).toFixed(1)} ms   max ${sorted.at(-1)?.toFixed(1)} ms`,
  );
  const idle = f.stack === 'dual' ? '256 IPs of each family' : '256 IPs';
  console.log(`${who}: RSS idle (${idle}, no pods): ${f.idleRss.toFixed(1)} MiB`);
  console.log(
    `${who}: RSS with ${PODS} pods on the node, ${f.assigned} holding ${ips}: ${f.rssAfterRamp.toFixed(1)} MiB`,
  );
  const everyPod =
    f.churnFailed === 0 && f.assigned === PODS && f.perPod === (f.stack === 'dual' ? 2 : 1);
  console.log(
    againstGoal(
      `${who}: RSS with ${PODS} pods after ${CHURN_SECONDS} s of churn (${f.replaced} pods replaced, ` +
        `${f.churnFailed} got no IP): ${f.rss.toFixed(1)} MiB`,
      f.rss <= GOAL_MIB && everyPod,
      `<= ${GOAL_MIB} MiB, every pod with ${ips}`,
    ),
  );
  console.log(
    `${who}: of which anonymous ${f.rssAnon.toFixed(1)} MiB, file-backed ${f.rssFile.toFixed(1)} MiB ` +
      `(the node binary's pages: clean, reclaimable)`,
  );
  console.log(
    `${who}: RSS at each tenth of the churn: ${f.churnRss.map((r) => r.toFixed(1)).join(', ')} MiB`,
  );
  console.log(
    `${who}: sampled peak ${f.peakRss.toFixed(1)} MiB, VmHWM ${f.hwm.toFixed(1)} MiB; ` +
      `CPU ${((f.cpuChurn / CHURN_SECONDS) * 1000).toFixed(0)}m while churning`,
  );
  console.log(
    `${who}: CPU ${f.cpuRamp.toFixed(2)} s over the ${f.rampSeconds.toFixed(1)} s ramp ` +
      `(${((f.cpuRamp / f.rampSeconds) * 1000).toFixed(0)}m), ${(f.cpuQuiet * 1000).toFixed(0)}m while quiet`,
  );
  console.log(`${who}: exit code after SIGTERM: ${f.code}`);
}

const single = await measure('single');
const dual = await measure('dual');
console.log(runInfo());
report(single);
report(dual);
const ratio = dual.rss / single.rss;
console.log(
  againstGoal(
    `sidecar: RSS with ${PODS} dual-stack pods after churn / single-stack, same run: ` +
      `${ratio.toFixed(3)} (${dual.rss.toFixed(1)} / ${single.rss.toFixed(1)} MiB; ` +
      `after the ramp ${(dual.rssAfterRamp / single.rssAfterRamp).toFixed(3)})`,
    ratio <= DUAL_GOAL_RATIO,
    `<= ${DUAL_GOAL_RATIO}`,
  ),
);
