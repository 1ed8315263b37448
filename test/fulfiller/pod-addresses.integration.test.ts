// The fulfiller's pod list for the last record (pod-rescue.ts) over HTTP,
// as the fulfiller's own identity (RBAC: list pods), past one page: the
// addresses of pods beyond the first 500 are read, and finished or
// host-network pods report none.
import { expect } from 'chai';
import { kubeClusterListApi } from '../../src/fulfiller/kube-api.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { NS } from '../support/test-cluster.ts';

describe('fulfiller: the pods list of a new term, page by page', function () {
  this.timeout(60_000);
  let cluster: StrictCluster;
  after(() => cluster?.close());

  it('reads every page and keeps only pods that hold addresses', async () => {
    cluster = await strictCluster();
    const { core } = cluster;
    const pod = (name: string, spec: Record<string, unknown> = {}) =>
      core.createNamespacedPod({
        namespace: 'default',
        body: {
          metadata: { name },
          spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'x' }], ...spec },
        },
      });
    const withStatus = async (name: string, status: Record<string, unknown>) => {
      const p = await core.readNamespacedPod({ name, namespace: 'default' });
      await core.replaceNamespacedPodStatus({ name, namespace: 'default', body: { ...p, status } });
    };
    // 505 pods without an address first (the list's order is by name): a page of 500 and more.
    for (let i = 0; i < 505; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, 505 - i) }, (_, k) =>
          pod(`a-${String(i + k).padStart(3, '0')}`),
        ),
      );
    await pod('z-running');
    await withStatus('z-running', {
      phase: 'Running',
      podIP: '10.0.0.5',
      podIPs: [{ ip: '10.0.0.5' }, { ip: 'fd00::5' }],
    });
    await pod('z-done');
    await withStatus('z-done', { phase: 'Succeeded', podIP: '10.0.0.6' });
    await pod('z-host', { hostNetwork: true });
    await withStatus('z-host', { phase: 'Running', podIP: '192.168.0.1' });

    const lists = kubeClusterListApi(await cluster.fulfillerKubeConfig(), NS);
    expect(await lists.listPodAddresses!()).to.deep.equal([
      { node: 'node-a', ips: ['10.0.0.5', 'fd00::5'] },
    ]);
    expect(cluster.refusals()).to.deep.equal([]);
  });
});
