// Found by the chaos runs (harness/README.md#chaos): a fulfiller sent SIGTERM shortly after
// its watches had been dropped did not exit (an open watch connection kept
// it alive until SIGKILL). client-node's ListWatch waits before re-watching
// a watch the server closed (1 s, doubling while no event arrives in
// between), and stop() during that wait does not stop the re-watch that
// follows it: it opens a watch nobody will ever close.
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { watchResource } from '../../src/kube/watch.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { NNC_PLURAL, nncPath } from '../../src/nnc/types.ts';
import { NNC, NS, startTestCluster, type TestCluster } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

describe('kube/watch: watches the server closes (chaos finding)', function () {
  this.timeout(30_000);
  let cluster: TestCluster;
  let server: ApiServer;
  let kc: KubeConfig;
  beforeEach(async () => {
    // The default bookmark period (a minute): a bookmark between the drops would
    // reset the wait this test is about. client-node's own connection handling.
    cluster = await startTestCluster({ pooled: false });
    ({ server, kc } = cluster);
  });
  afterEach(() => cluster.close());

  const watches = () => server.counters().count('watch', NNC_PLURAL);
  const start = () => {
    const api = cluster.objects;
    return watchResource<KubernetesObject>({
      kc,
      path: nncPath(NS),
      listFn: async () =>
        (await api.listNamespacedCustomObject(NNC)) as KubernetesListObject<KubernetesObject>,
      logger: silentLogger(),
      name: 'nnc',
    });
  };

  it('opens no watch after stop(), even when stopped while waiting to re-watch', async () => {
    const w = start();
    await w.whenSynced();
    // Two quick closes: the library now waits (at least 1 s) before the next watch.
    for (let drop = 1; drop <= 2; drop += 1) {
      await waitFor('a live watch', () => watches() === drop, 5000);
      server.faults.dropWatches(NNC_PLURAL);
    }
    await sleep(50);
    await w.stop();
    const after = watches();
    await sleep(2500);
    expect(watches(), 'watch requests after stop()').to.equal(after);
    expect(server.faults.dropWatches(), 'watches still open after stop()').to.equal(0);
  });
});
