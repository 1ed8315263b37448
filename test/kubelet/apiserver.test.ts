// The simulated kubelet and the workload driver against the real local API
// server (harness/apiserver) over HTTP, with a fake CNS endpoint for IPAM.
import { expect } from 'chai';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { checkClusterInvariants } from '../../src/sim/invariants.ts';
import { startSimKubelet } from '../../harness/kubelet/start.ts';
import { requestsByVerb } from '../../src/sim/report/report.ts';
import { WorkloadDriver } from '../../harness/workload/driver.ts';
import { kubePodApi } from '../../harness/workload/kube.ts';
import { planScenario } from '../../harness/workload/plan.ts';
import { WORKLOAD_SELECTOR } from '../../harness/workload/pod.ts';
import { parseScenario } from '../../harness/workload/scenario.ts';
import { startFakeCns, type FakeCns } from './fake-cns.ts';

const IPS = ['10.240.0.10', '10.240.0.11', '10.240.0.12'];

const until = async (cond: () => boolean | Promise<boolean>, what: string, ms = 8000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('sim/kubelet against the local API server', function () {
  this.timeout(20_000);
  let server: ApiServer;
  let cns: FakeCns;
  let kc: KubeConfig;

  before(async () => {
    server = await startApiServer();
    kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    cns = await startFakeCns(IPS);
  });
  after(async () => {
    await cns.close();
    await server.close();
  });

  it('drives pods to Running with IPs, re-uses released IPs, and keeps the invariants', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const node = startSimKubelet({
      kc,
      nodeName: 'node-a',
      sidecarUrl: cns.url,
      logger: silentLogger(),
      backoff: { initialMs: 10, maxMs: 50 },
    });
    const kubelet = node.kubelet;
    await node.whenSynced();
    const podApi = kubePodApi(kc);
    const plan = planScenario(
      parseScenario({ name: 'it', durationSeconds: 5, steps: [{ at: 0, create: 4 }] }),
      ['node-a', 'node-b'],
    );
    const driver = new WorkloadDriver({ api: podApi, plan });
    await driver.run();
    expect(driver.counters.created).to.equal(8);

    const pods = async (): Promise<V1Pod[]> =>
      (await core.listNamespacedPod({ namespace: 'default', labelSelector: WORKLOAD_SELECTOR }))
        .items;
    const running = async () =>
      (await pods()).filter((p) => p.spec?.nodeName === 'node-a' && p.status?.phase === 'Running');
    await until(
      async () => (await running()).length === 3 && kubelet.counters.noIpAnswers > 0,
      '3 running',
    );
    // Pods of another node are not this kubelet's.
    const nodeBUids = new Set(
      (await pods()).filter((p) => p.spec?.nodeName === 'node-b').map((p) => p.metadata!.uid),
    );
    expect(nodeBUids.size).to.equal(4);
    expect(cns.bodies.some((b) => nodeBUids.has(String(b.infraContainerID)))).to.equal(false);
    expect(kubelet.counters.podsSeen).to.equal(4);
    const byName = new Map((await running()).map((p) => [p.metadata!.name!, p]));
    for (const p of byName.values()) {
      expect(IPS).to.include(p.status!.podIP);
      expect(p.status!.podIPs).to.deep.equal([{ ip: p.status!.podIP }]);
    }

    // Completing a pod (phase Succeeded, as a Job) hands its IP to the waiting one.
    const done = [...byName.keys()][0]!;
    await podApi.setPodPhase('default', done, 'Succeeded');
    await until(
      async () =>
        (await running()).length === 3 && !(await running()).some((p) => p.metadata!.name === done),
      'the waiting pod running',
    );
    expect(kubelet.counters.releases).to.equal(1);
    expect(kubelet.waits).to.have.length(4);

    const nnc: NodeNetworkConfig = {
      metadata: { name: 'node-a' },
      spec: { ipsNotInUse: [] },
      status: {
        networkContainers: [
          { id: 'nc', ipAssignments: IPS.map((ip, i) => ({ name: `id${i}`, ip })) },
        ],
      },
    };
    const nodeA = (await pods()).filter((p) => p.spec?.nodeName === 'node-a');
    expect(checkClusterInvariants(nodeA, [nnc])).to.deep.equal([]);

    // Deleting every pod of node-a gives all IPs back.
    for (const p of nodeA) await podApi.deletePod('default', p.metadata!.name!);
    await until(() => cns.assigned.size === 0, 'all IPs released');
    expect(kubelet.runningPods()).to.equal(0);

    const verbs = requestsByVerb(server.counters().entries());
    expect(verbs.create).to.equal(8);
    expect(verbs.patch).to.be.at.least(5);
    expect(verbs.delete).to.equal(4);
    expect(verbs.watch).to.be.at.least(1);

    await node.stop();
  });
});
