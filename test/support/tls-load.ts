// Connection-count workloads against the local API server over TLS, shared
// by test/kube/tls-connections.test.ts and bench/connections.ts: a sidecar
// whose NNC spec is edited out of band N times (it writes each correction)
// while its watches are dropped twice, and a fulfiller making N status
// writes. Each runs with its own service-account token, so the server counts
// the connections of that user alone.
import { KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { writeKubeconfig } from '../../harness/apiserver/kubeconfig.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import { loadKubeConfig } from '../../src/kube/config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { NNC_PLURAL } from '../../src/nnc/types.ts';
import { runSidecar } from '../../src/sidecar/run.ts';
import {
  createNnc,
  fulfil,
  getNnc,
  sidecarOptions,
  FAST,
  type Cluster,
} from '../sidecar/harness.ts';
import { NNC, NS, startTestCluster } from './test-cluster.ts';
import { sleep, waitFor } from './wait.ts';

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface TlsCluster extends Cluster {
  /** A kubeconfig file (server CA, no skip-verify) with a token of service account kube-system/NAME. */
  kubeconfigFor(sa: string): Promise<string>;
}

export async function startTlsCluster(): Promise<TlsCluster> {
  const cluster = await startTestCluster({ tls: true });
  const { dir, server, core } = cluster;
  return {
    ...cluster,
    async kubeconfigFor(sa) {
      await core.createNamespacedServiceAccount({
        namespace: NS,
        body: { metadata: { name: sa } },
      });
      const tr = await core.createNamespacedServiceAccountToken({
        namespace: NS,
        name: sa,
        body: { spec: { audiences: [] } },
      });
      const path = join(dir, `${sa}.kubeconfig`);
      writeKubeconfig(path, server.url, {
        caPem: server.caPem as string,
        token: tr.status?.token as string,
      });
      return path;
    },
  };
}

export interface LoadResult {
  /** Connections the component's user opened. */
  connections: number;
  /** Writes it made (NNC spec patches, or NNC status writes). */
  writes: number;
}

/**
 * The sidecar of node `node` over `writes` out-of-band spec edits, each
 * corrected by one server-side apply, with two watch drops on the way.
 * `pooled: false` runs it on client-node's own connection handling (the "before").
 */
export async function sidecarLoad(
  c: TlsCluster,
  opts: { writes: number; pooled: boolean; node?: string },
): Promise<LoadResult> {
  const node = opts.node ?? 'node-0';
  const sa = `sidecar-${opts.pooled ? 'pooled' : 'plain'}`;
  const kubeconfig = await c.kubeconfigFor(sa);
  await createNnc(c, node, { requestedIPCount: 0 });
  await fulfil(c, node);
  const state = mkdtempSync(join(c.dir, 'state-'));
  const plain = new KubeConfig();
  plain.loadFromFile(kubeconfig);
  const sidecar = await runSidecar(
    sidecarOptions(c, node, state, { kubeconfig, logLevel: 'error' }),
    {
      ...FAST,
      logger: silentLogger(),
      events: false,
      ...(opts.pooled ? {} : { kc: plain }),
    },
  );
  const user = `system:serviceaccount:${NS}:${sa}`;
  const patches = () => c.server.counters().count('patch', NNC_PLURAL);
  try {
    const target = await waitFor(
      'first spec write',
      async () => {
        const n = await getNnc(c, node);
        return (n.spec?.requestedIPCount ?? 0) > 0 ? n.spec?.requestedIPCount : undefined;
      },
      15_000,
    );
    let writes = 0;
    for (let i = 0; i < opts.writes; i++) {
      if (i === Math.floor(opts.writes / 3) || i === Math.floor((2 * opts.writes) / 3)) {
        c.server.faults.dropWatches();
        await sleep(100); // the watches come back (and re-list) before the next edit
      }
      const before = patches();
      await c.objects.patchNamespacedCustomObject(
        { ...NNC, name: node, body: { spec: { requestedIPCount: (target ?? 0) + 1 + (i % 7) } } },
        MERGE,
      );
      // The admin's merge patch counts once; the sidecar's correction once more.
      await waitFor(
        'the sidecar to correct the spec',
        async () => {
          if (patches() < before + 2) return undefined;
          return (await getNnc(c, node)).spec?.requestedIPCount === target;
        },
        15_000,
      );
      writes += 1;
    }
    return { connections: c.server.connections().byUser[user] ?? 0, writes };
  } finally {
    await sidecar.stop();
  }
}

/** The fulfiller over at least `writes` status writes: `nodes` NNCs whose spec moves until then. */
export async function fulfillerLoad(
  c: TlsCluster,
  opts: { writes: number; nodes: number; pooled: boolean },
): Promise<LoadResult> {
  const sa = `fulfiller-${opts.pooled ? 'pooled' : 'plain'}`;
  const kubeconfig = await c.kubeconfigFor(sa);
  const prefix = `f-${opts.pooled ? 'p' : 'x'}`;
  for (let i = 0; i < opts.nodes; i++) {
    // The fulfiller deletes an NNC whose Node is gone: each has its Node.
    await c.addNode(`${prefix}-${i}`);
    await c.createNnc(`${prefix}-${i}`, { requestedIPCount: 2 });
  }
  let loaded: ReturnType<typeof loadKubeConfig> | undefined;
  let kc: KubeConfig;
  if (opts.pooled) kc = (loaded = loadKubeConfig({ kubeconfig })).kc;
  else (kc = new KubeConfig()).loadFromFile(kubeconfig);
  const running = await startFulfiller({
    kc,
    config: makeFulfillerConfig({ subnet: '10.64.0.0/10', workers: 8, minIntervalMs: 0 }),
    logger: silentLogger(),
    events: false,
    defaultMetrics: false,
  });
  const user = `system:serviceaccount:${NS}:${sa}`;
  try {
    await running.whenSynced();
    let round = 0;
    for (;;) {
      await waitFor(
        'the fulfiller to settle',
        () => {
          const s = running.fulfiller.stats();
          return s.pending === 0 && s.active === 0 && s.allocated >= opts.nodes * (2 + round);
        },
        60_000,
      );
      if (running.fulfiller.stats().writes >= opts.writes) break;
      round += 1;
      for (let i = 0; i < opts.nodes; i++)
        await c.objects.patchNamespacedCustomObject(
          { ...NNC, name: `${prefix}-${i}`, body: { spec: { requestedIPCount: 2 + round } } },
          MERGE,
        );
    }
    return {
      connections: c.server.connections().byUser[user] ?? 0,
      writes: running.fulfiller.stats().writes,
    };
  } finally {
    await running.stop();
    await loaded?.connections.destroy();
  }
}
