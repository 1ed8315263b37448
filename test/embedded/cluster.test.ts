// The embedded cluster in process, at two nodes: its sidecars' SQLite stores
// run with synchronous=NORMAL (state that dies with the process need not be
// fsynced per commit), while a sidecar started on its own keeps FULL.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedCluster } from '../../src/embedded/cluster.ts';
import type { SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { DEFAULT_NAMESPACE } from '../../src/nnc/types.ts';
import { runSidecar } from '../../src/sidecar/run.ts';

describe('embedded: cluster in process', function () {
  this.timeout(30_000);
  const runDir = mkdtempSync(join(tmpdir(), 'embedded-cluster-'));
  after(() => rmSync(runDir, { recursive: true, force: true }));

  it('opens every node store with synchronous=NORMAL; a standalone sidecar keeps FULL', async () => {
    const cluster = await startEmbeddedCluster({
      nodeNames: ['n-0', 'n-1'],
      podSubnet: '10.0.0.0/16',
      runDir,
      logger: silentLogger(),
      events: false,
    });
    try {
      for (const n of cluster.nodes) {
        const store = n.sidecar.store as SqliteIpStore;
        expect(store.durability().synchronous).to.equal('NORMAL');
      }
      const stateDir = join(runDir, 'standalone');
      mkdirSync(stateDir);
      const standalone = await runSidecar(
        {
          nodeName: 'n-0',
          namespace: DEFAULT_NAMESPACE,
          stateDir,
          listenHost: '127.0.0.1',
          listenPort: 0,
          logLevel: 'error',
          subnetState: 'name',
          releaseDelaySeconds: 0,
          dryRun: true,
        },
        { kc: cluster.kc, logger: silentLogger(), defaultMetrics: false, events: false },
      );
      try {
        expect((standalone.store as SqliteIpStore).durability().synchronous).to.equal('FULL');
      } finally {
        await standalone.stop();
      }
    } finally {
      await cluster.stop();
    }
  });
});
