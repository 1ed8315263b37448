// Fulfiller benchmark on the local API server, N Nodes (default 5,000) whose
// NNCs ask for R IPs each (default 16):
// - fill: the fulfiller creates every NNC and fills it; time and writes;
// - restart: a fresh fulfiller over the filled NNCs: time until it has
//   listed and looked at every node, and the writes it sent (nothing to do);
// - resync: one resync over every NNC with nothing to do: time, requests;
// - work: K NNCs change their request: requests per NNC that needed work.
// Targets (docs/design/fulfiller.md#shape): a resync over 5,000 NNCs with nothing to do in <= 5 s,
// and <= 1 API request per NNC that needs work.
// `node bench/fulfiller.ts [nodes] [ips] [changed]`.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { startApiServer } from '../harness/apiserver/server.ts';
import type { ApiServer } from '../harness/apiserver/server.ts';
import { makeFulfillerConfig } from '../src/fulfiller/config.ts';
import { startFulfiller } from '../src/fulfiller/run.ts';
import type { RunningFulfiller } from '../src/fulfiller/run.ts';
import { inBatches } from '../harness/embedded/cluster.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import { silentLogger } from '../src/log/logger.ts';
import type { NodeNetworkConfig } from '../src/nnc/types.ts';
import { NNC_PLURAL } from '../src/nnc/types.ts';
import { NNC, nncObject } from '../test/support/test-cluster.ts';

const nodes = Number(process.argv[2] ?? 5000);
const ips = Number(process.argv[3] ?? 16);
const changed = Number(process.argv[4] ?? 50);
const names = Array.from({ length: nodes }, (_, i) => `node-${i}`);

const server: ApiServer = await startApiServer({
  crdsDir: fileURLToPath(new URL('../manifests/crds/', import.meta.url)),
  logger: silentLogger(),
  historyLimit: nodes * 10,
});
// The product's connection handling: a keep-alive pool of at most 4 request connections.
const { kc, connections: pool } = loadKubeConfig({ kubeconfig: server.kubeconfigPath });
const api = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);

const writes = (): number =>
  server
    .counters()
    .entries()
    .filter((e) => !['get', 'list', 'watch'].includes(e.verb))
    .reduce((n, e) => n + e.count, 0);
const requests = (): number =>
  server
    .counters()
    .entries()
    .reduce((n, e) => n + e.count, 0);

async function start(k: KubeConfig): Promise<RunningFulfiller> {
  return startFulfiller({
    kc: k,
    config: makeFulfillerConfig({ subnet: '10.0.0.0/12', workers: 16, minIntervalMs: 0 }),
    logger: silentLogger(),
    events: false,
    defaultMetrics: false,
  });
}

async function idle(r: RunningFulfiller): Promise<void> {
  for (;;) {
    await r.fulfiller.whenIdle();
    const s = r.fulfiller.stats();
    if (s.pending === 0 && s.active === 0) return;
  }
}

async function setRequest(name: string, requestedIPCount: number): Promise<void> {
  const cur = (await api.getNamespacedCustomObject({ ...NNC, name })) as NodeNetworkConfig;
  await api.replaceNamespacedCustomObject({
    ...NNC,
    name,
    body: { ...cur, spec: { requestedIPCount } },
  });
}

// Nodes first; NNCs with their request (as sidecars would write it).
await inBatches(names, 64, (name) => core.createNode({ body: { metadata: { name } } }));
await inBatches(names, 64, (name) =>
  api.createNamespacedCustomObject({
    ...NNC,
    body: nncObject(name, { requestedIPCount: ips }),
  }),
);

// fill
let t = performance.now();
let w = writes();
const first = await start(kc);
await first.whenSynced();
for (;;) {
  await idle(first);
  if (first.fulfiller.stats().allocated >= nodes * ips) break;
  await new Promise((r) => setTimeout(r, 20));
}
const fill = { ms: Math.round(performance.now() - t), writes: writes() - w };
await first.stop();

// restart: nothing to do
t = performance.now();
w = writes();
const second = await start(kc);
await second.whenSynced();
await idle(second);
const restart = { ms: Math.round(performance.now() - t), writes: writes() - w };

// resync: nothing to do
t = performance.now();
let q = requests();
second.fulfiller.resync();
await idle(second);
const resync = { ms: Math.round(performance.now() - t), requests: requests() - q };

// work: `changed` NNCs ask for one batch more; count the fulfiller's requests.
const before = second.fulfiller.stats().writes;
const statusBefore = server.counters().count('update', `${NNC_PLURAL}/status`);
const getsBefore = server.counters().count('get', NNC_PLURAL);
await inBatches(names.slice(0, changed), 16, (name) => setRequest(name, ips + 16));
for (;;) {
  await idle(second);
  if (second.fulfiller.stats().writes - before >= changed) break;
  await new Promise((r) => setTimeout(r, 20));
}
const statusWrites = server.counters().count('update', `${NNC_PLURAL}/status`) - statusBefore;
// The bench's own reads (setRequest) are subtracted: they are not the fulfiller's.
const fulfillerGets = server.counters().count('get', NNC_PLURAL) - getsBefore - changed;
q = (statusWrites + fulfillerGets) / changed;

await second.stop();
await server.close();
await pool.destroy();
const mem = process.memoryUsage();
console.log(
  JSON.stringify({
    bench: 'fulfiller',
    nodes,
    ipsPerNode: ips,
    fillMs: fill.ms,
    fillWrites: fill.writes,
    restartNothingToDoMs: restart.ms,
    restartWrites: restart.writes,
    resyncNothingToDoMs: resync.ms,
    resyncRequests: resync.requests,
    changedNncs: changed,
    requestsPerNncNeedingWork: Number(q.toFixed(2)),
    targets: { resyncMs: 5000, requestsPerNnc: 1 },
    ok: resync.ms <= 5000 && resync.requests === 0 && q <= 1,
    rssMiB: Math.round(mem.rss / 2 ** 20),
  }),
);
