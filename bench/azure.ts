// Azure backend benchmark through the REAL fulfiller: the local API server,
// the ARM emulator over HTTP and the real SDK. N Nodes with a VM and NIC each
// and their NNCs asking for R IPs (as sidecars would have written them); the
// fulfiller starts (pod subnet read, usage, one NIC list) and fills every NNC
// with ONE PUT per node (PUT, its operation poll, the re-read). Time to
// converge = fulfiller start → every NNC status holds R. Printed next to what
// the token bucket alone implies for the ARM calls made: (calls − burst) / qps,
// at the run's bucket and at the default one (4 qps, burst 20).
//
// `node bench/azure.ts` (make bench): 1,000 × 30 at 1000 qps (the machinery's
// own speed; the default bucket's bound printed beside it) and 50 × 30 at the
// default 4 qps / burst 20 (measured against the bucket's bound).
// `node bench/azure.ts NODES IPS` with AZURE_QPS, AZURE_BURST (default 4, 20)
// and WORKERS (default 8): one run (`make bench-azure-full`: 1,000 × 30 at 4 qps).
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { startApiServer } from '../src/apiserver/server.ts';
import { EmulatedCloud } from '../src/azure/emulator/cloud.ts';
import { DEFAULT_AZURE_BURST, DEFAULT_AZURE_QPS } from '../src/azure/settings.ts';
import { inBatches } from '../src/embedded/cluster.ts';
import { makeFulfillerConfig } from '../src/fulfiller/config.ts';
import { startFulfiller } from '../src/fulfiller/run.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import { silentLogger } from '../src/log/logger.ts';
import type { NodeNetworkConfig } from '../src/nnc/types.ts';
import { dynamicContainers, GROUP, NNC_PLURAL, NNC_VERSION } from '../src/nnc/types.ts';

interface Run {
  nodes: number;
  ips: number;
  qps: number;
  burst: number;
  workers: number;
}

const NS = 'kube-system';
const NNC = { group: GROUP, version: NNC_VERSION, namespace: NS, plural: NNC_PLURAL };

async function bench(run: Run): Promise<Record<string, unknown>> {
  const names = Array.from({ length: run.nodes }, (_, i) => `node-${i}`);
  const server = await startApiServer({
    crdsDir: fileURLToPath(new URL('../manifests/crds/', import.meta.url)),
    logger: silentLogger(),
    historyLimit: run.nodes * 10,
  });
  const cloud = new EmulatedCloud({ podPrefix: '10.240.0.0/16' });
  await cloud.start();
  const { kc, connections } = loadKubeConfig({ kubeconfig: server.kubeconfigPath });
  const core = kc.makeApiClient(CoreV1Api);
  const api = kc.makeApiClient(CustomObjectsApi);
  // Nodes with their VMs' providerIDs, then NNCs with their request.
  const ids = names.map((n) => cloud.addNode(n));
  await inBatches(names, 64, (name, i) =>
    core.createNode({ body: { metadata: { name }, spec: { providerID: ids[i]! } } }),
  );
  await inBatches(names, 64, (name) =>
    api.createNamespacedCustomObject({
      ...NNC,
      body: {
        apiVersion: `${GROUP}/${NNC_VERSION}`,
        kind: 'NodeNetworkConfig',
        metadata: { name, namespace: NS },
        spec: { requestedIPCount: run.ips },
      },
    }),
  );
  const filled = (): number =>
    (server.objects(GROUP, NNC_PLURAL, NS) as unknown as NodeNetworkConfig[]).filter(
      (o) =>
        dynamicContainers(o)[0]?.ipAssignments?.length === run.ips &&
        o.status?.status === 'Updated',
    ).length;

  const t0 = performance.now();
  const fulfiller = await startFulfiller({
    kc,
    config: makeFulfillerConfig({ workers: run.workers, minIntervalMs: 0 }),
    logger: silentLogger(),
    events: false,
    defaultMetrics: false,
    backend: cloud.backendFactory({ qps: run.qps, burst: run.burst }),
  });
  while (filled() < run.nodes) await new Promise((r) => setTimeout(r, 50));
  const seconds = (performance.now() - t0) / 1000;
  await fulfiller.stop();
  await cloud.stop();
  await server.close();
  await connections.destroy();

  const report = cloud.report();
  const byOperation: Record<string, number> = {};
  for (const [k, n] of Object.entries(report.byOperationAndStatus)) {
    const op = k.split(' ')[0]!;
    byOperation[op] = (byOperation[op] ?? 0) + n;
  }
  const calls = Object.values(byOperation).reduce((a, b) => a + b, 0);
  const bound = (qps: number, burst: number) =>
    Number((Math.max(0, calls - burst) / qps).toFixed(1));
  const atRun = bound(run.qps, run.burst);
  return {
    bench: 'azure-fulfiller',
    nodes: run.nodes,
    ipsPerNode: run.ips,
    qps: run.qps,
    burst: run.burst,
    workers: run.workers,
    convergeSeconds: Number(seconds.toFixed(1)),
    armCalls: calls,
    armCallsPerNode: Number((calls / run.nodes).toFixed(2)),
    putsPerNode: report.putsPerNode,
    byOperationAndStatus: report.byOperationAndStatus,
    bucketBoundSeconds: atRun,
    defaultBucketBoundSeconds: bound(DEFAULT_AZURE_QPS, DEFAULT_AZURE_BURST),
    // Where the bucket is the limit: never faster than it allows, and no slower
    // than its bound plus 10 % and 2 s (it is the only limit).
    ...(run.qps < 100 ? { meetsBound: seconds >= atRun - 0.5 && seconds <= atRun * 1.1 + 2 } : {}),
    addressesTaken: cloud.emulator.network.counts.taken,
    rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
  };
}

const workers = Number(process.env.WORKERS ?? 8);
const runs: Run[] = process.argv[2]
  ? [
      {
        nodes: Number(process.argv[2]),
        ips: Number(process.argv[3] ?? 30),
        qps: Number(process.env.AZURE_QPS ?? DEFAULT_AZURE_QPS),
        burst: Number(process.env.AZURE_BURST ?? DEFAULT_AZURE_BURST),
        workers,
      },
    ]
  : [
      { nodes: 1000, ips: 30, qps: 1000, burst: 100, workers },
      { nodes: 50, ips: 30, qps: DEFAULT_AZURE_QPS, burst: DEFAULT_AZURE_BURST, workers },
    ];
for (const run of runs) console.log(JSON.stringify(await bench(run)));
