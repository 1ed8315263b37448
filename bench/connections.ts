// Connections to a TLS API server (a CA in the kubeconfig, as on every real
// cluster): a sidecar over 200 NNC writes and two watch restarts, a fulfiller
// over 1,000 status writes; before (client-node's own connection handling)
// and after (the product's keep-alive pool, src/kube/shared-dispatcher.ts).
import { fulfillerLoad, sidecarLoad, startTlsCluster } from '../test/support/tls-load.ts';

const c = await startTlsCluster();
try {
  const out: Record<string, unknown> = { bench: 'connections' };
  for (const pooled of [false, true]) {
    const when = pooled ? 'after' : 'before';
    const s = await sidecarLoad(c, { writes: 200, pooled, node: `node-${when}` });
    const f = await fulfillerLoad(c, { writes: 1000, nodes: 250, pooled });
    out[when] = {
      sidecar: { nncWrites: s.writes, watchRestarts: 2, connections: s.connections },
      fulfiller: { statusWrites: f.writes, connections: f.connections },
    };
  }
  console.log(JSON.stringify(out));
} finally {
  await c.close();
}
