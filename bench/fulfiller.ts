// Fulfiller benchmark: N NNCs created at once on the local API server, each
// asking for R IPs; prints the time until every status holds its IPs, the
// status writes, and memory. `node bench/fulfiller.ts [nodes] [ips]`.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { startApiServer } from '../src/apiserver/server.ts';
import { makeFulfillerConfig } from '../src/fulfiller/config.ts';
import { startFulfiller } from '../src/fulfiller/run.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import { silentLogger } from '../src/log/logger.ts';

const nodes = Number(process.argv[2] ?? 300);
const ips = Number(process.argv[3] ?? 32);
const NNC = {
  group: 'acn.azure.com',
  version: 'v1alpha',
  namespace: 'kube-system',
  plural: 'nodenetworkconfigs',
};

const server = await startApiServer({
  crdsDir: fileURLToPath(new URL('../manifests/crds/', import.meta.url)),
  logger: silentLogger(),
});
const { kc } = loadKubeConfig({ kubeconfig: server.kubeconfigPath });
const api = kc.makeApiClient(CustomObjectsApi);
for (let i = 0; i < nodes; i++) {
  await api.createNamespacedCustomObject({
    ...NNC,
    body: {
      apiVersion: 'acn.azure.com/v1alpha',
      kind: 'NodeNetworkConfig',
      metadata: { name: `node-${i}`, namespace: 'kube-system' },
      spec: { requestedIPCount: ips },
    },
  });
}
const t0 = performance.now();
const running = startFulfiller({
  kc,
  config: makeFulfillerConfig({ subnet: '10.0.0.0/12' }),
  logger: silentLogger(),
  events: false,
});
await running.watch.whenSynced();
for (;;) {
  const s = running.fulfiller.stats();
  if (s.allocated >= nodes * ips && s.pending === 0 && s.active === 0) break;
  await new Promise((r) => setTimeout(r, 20));
}
const ms = performance.now() - t0;
const s = running.fulfiller.stats();
await running.stop();
await server.close();
const mem = process.memoryUsage();
console.log(
  JSON.stringify({
    bench: 'fulfiller',
    nodes,
    ipsPerNode: ips,
    convergeMs: Math.round(ms),
    nodesPerSecond: Math.round((nodes / ms) * 1000),
    statusWrites: s.writes,
    conflicts: s.conflicts,
    failures: s.failures,
    rssMiB: Math.round(mem.rss / 2 ** 20),
    heapMiB: Math.round(mem.heapUsed / 2 ** 20),
  }),
);
