// The embedded cluster with its sidecars in a worker thread (worker-host.ts,
// what bench/embedded.ts runs): the real sidecars over there, each with its
// own token, serve the kubelets (one here, one over there beside its
// sidecar) a workload to Running with IPs and no invariant broken, both
// kubelets' pods are told here, nothing the product needs is refused, the
// thread's CPU time is told (what the bench prints), and stop() ends every
// node API and the thread.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { productAccessReport, refusals } from '../../harness/embedded/access.ts';
import { startEmbeddedCluster, WORKLOAD_NAMESPACE } from '../../harness/embedded/cluster.ts';
import { inShare, workerHost } from '../../harness/embedded/worker-host.ts';
import { WorkloadDriver } from '../../harness/workload/driver.ts';
import { kubePodApi } from '../../harness/workload/kube.ts';
import { planScenario } from '../../harness/workload/plan.ts';
import { parseScenario } from '../../harness/workload/scenario.ts';
import type { PodWait } from '../../harness/kubelet/kubelet.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { DEFAULT_NAMESPACE, GROUP, NNC_PLURAL } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { checkClusterInvariants, type PodSnapshot } from '../../src/sim/invariants.ts';
import { waitFor } from '../support/wait.ts';

describe('embedded: sidecars in a worker thread', function () {
  this.timeout(60_000);
  const runDir = mkdtempSync(join(tmpdir(), 'embedded-worker-'));
  after(() => rmSync(runDir, { recursive: true, force: true }));

  it('spreads a share of the kubelets evenly in node order', () => {
    const taken = (share: number, n: number) =>
      Array.from({ length: n }, (_, i) => (inShare(i, share) ? 1 : 0)).join('');
    expect(taken(1 / 3, 9)).to.equal('001001001');
    expect(taken(0.5, 4)).to.equal('0101');
    expect(taken(0, 4)).to.equal('0000');
    expect(taken(1, 4)).to.equal('1111');
    expect(
      Array.from({ length: 1000 }, (_, i) => i).filter((i) => inShare(i, 1 / 3)),
    ).to.have.length(333);
  });

  it('refuses a kubelet share outside 0 to 1 before it starts a thread', () => {
    expect(() => workerHost({ logLevel: 'error', kubeletShare: 1.5 })).to.throw(
      /kubeletShare must be between 0 and 1, got 1.5/,
    );
    expect(() => workerHost({ logLevel: 'error', kubeletShare: Number.NaN })).to.throw(
      /kubeletShare/,
    );
  });

  it('runs the real sidecars there: pods Running with IPs, nothing refused, all stopped', async () => {
    const nodeNames = ['n-0', 'n-1'];
    const waits: PodWait[] = [];
    // n-1's kubelet runs over there beside its sidecar, n-0's here.
    const host = workerHost({ logLevel: 'error', kubeletShare: 0.5 });
    const cluster = await startEmbeddedCluster({
      nodeNames,
      podSubnet: '10.0.0.0/16',
      runDir,
      logger: silentLogger(),
      events: false,
      host,
      onRunning: (w) => waits.push(w),
    });
    const urls = cluster.nodes.map((n) => n.sidecar.url);
    try {
      expect(await cluster.whenReady(20_000)).to.equal(2);
      const cpuWhenReady = await host.threadCpuMs();
      expect(cpuWhenReady).to.be.greaterThan(0);
      // Handles only: the sidecars are not in this thread, nor is n-1's kubelet.
      for (const n of cluster.nodes) {
        expect(n.sidecar.inProcess).to.equal(undefined);
        expect((await fetch(`${n.sidecar.url}/readyz`)).status).to.equal(200);
      }
      expect(cluster.nodes.map((n) => n.kubelet.inProcess !== undefined)).to.deep.equal([
        true,
        false,
      ]);
      const plan = planScenario(
        parseScenario({ name: 'w', durationSeconds: 10, steps: [{ at: 0, create: 5 }] }),
        nodeNames,
      );
      const driver = new WorkloadDriver({
        api: kubePodApi(cluster.kc),
        plan,
        namespace: WORKLOAD_NAMESPACE,
      });
      await driver.run();
      expect(driver.counters.created).to.equal(10);
      const pods = () =>
        cluster.server.objects('', 'pods', WORKLOAD_NAMESPACE) as unknown as PodSnapshot[];
      await waitFor(
        'every pod Running with an IP',
        () => pods().filter((p) => p.status?.phase === 'Running' && p.status.podIP).length === 10,
        20_000,
      );
      await waitFor('every pod told running', () => waits.length === 10, 5_000);
      // The sidecars over there did the allocations: the thread's CPU time grew.
      expect(await host.threadCpuMs()).to.be.greaterThan(cpuWhenReady);
      expect(new Set(waits.map((w) => w.node))).to.deep.equal(new Set(nodeNames));
      const nncs = cluster.server.objects(
        GROUP,
        NNC_PLURAL,
        DEFAULT_NAMESPACE,
      ) as unknown as NodeNetworkConfig[];
      expect(checkClusterInvariants(pods(), nncs)).to.deep.equal([]);
      const access = productAccessReport(cluster.server.authorizations(), cluster.access.accounts);
      expect(refusals(access)).to.deep.equal([]);
      expect(access.sidecar.allowed).to.be.greaterThan(0);
    } finally {
      await cluster.stop();
    }
    for (const url of urls) {
      const answered = await fetch(`${url}/readyz`).then(
        () => true,
        () => false,
      );
      expect(answered, `${url} still answers after stop`).to.equal(false);
    }
    const asked = await host.threadCpuMs().then(
      (ms) => `answered ${ms}`,
      (err: unknown) => String(err),
    );
    expect(asked).to.match(/the sidecar thread ended/);
  });
});
