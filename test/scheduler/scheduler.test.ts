// The scheduler against the real local API server over HTTP: pods created
// without a node are bound through pods/binding to the freest Ready node,
// with a Scheduled Event; a pod that fits nowhere gets PodScheduled=False and
// is bound once a node can take it; the server refuses a second binding.
import { expect } from 'chai';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { apiErrorInfo } from '../../src/kube/errors.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { startSimScheduler, type RunningSimScheduler } from '../../harness/scheduler/scheduler.ts';
import { waitFor } from '../support/wait.ts';

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('sim/scheduler over HTTP', function () {
  this.timeout(20_000);
  let server: ApiServer;
  let core: CoreV1Api;
  let scheduler: RunningSimScheduler;

  const addNode = async (name: string, pods: number, labels: Record<string, string> = {}) => {
    await core.createNode({ body: { metadata: { name, labels } } });
    await core.patchNodeStatus(
      {
        name,
        body: {
          status: {
            allocatable: { pods: String(pods) },
            conditions: [{ type: 'Ready', status: 'True' }],
          },
        },
      },
      MERGE,
    );
  };
  const addPod = (name: string, nodeName?: string, nodeSelector?: Record<string, string>) =>
    core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name },
        spec: {
          containers: [{ name: 'c', image: 'x' }],
          ...(nodeName ? { nodeName } : {}),
          ...(nodeSelector ? { nodeSelector } : {}),
        },
      },
    });
  const nodeOf = async (name: string) =>
    (await core.readNamespacedPod({ name, namespace: 'default' })).spec?.nodeName;

  before(async () => {
    server = await startApiServer();
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    await addNode('n1', 3);
    await addNode('n2', 10);
    await addPod('busy-1', 'n2');
    await addPod('busy-2', 'n2');
    await addPod('busy-3', 'n2');
    scheduler = startSimScheduler({ kc, logger: silentLogger(), retryMs: 100 });
    await scheduler.whenSynced();
  });
  after(async () => {
    await scheduler.stop();
    await server.close();
  });

  it('binds a pod without a node to the node with the most free room, with an Event', async () => {
    await addPod('web');
    // n1: 3 free; n2: 10 - 3 = 7 free.
    expect(await waitFor('web bound', () => nodeOf('web'))).to.equal('n2');
    const events = await waitFor('the Scheduled event', async () => {
      const list = await core.listNamespacedEvent({ namespace: 'default' });
      return list.items.find((e) => e.reason === 'Scheduled' && e.involvedObject.name === 'web');
    });
    expect(events.message).to.equal('Successfully assigned default/web to n2');
  });

  it('marks a pod that fits nowhere Unschedulable, and binds it once a node fits', async () => {
    await addPod('picky', undefined, { zone: 'z1' });
    const cond = await waitFor('the PodScheduled condition', async () => {
      const pod = await core.readNamespacedPodStatus({ name: 'picky', namespace: 'default' });
      return pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    });
    expect(cond).to.include({ status: 'False', reason: 'Unschedulable' });
    expect(cond.message).to.match(/^0\/2 nodes are available: 2 node\(s\) didn't match/);
    await addNode('n3', 5, { zone: 'z1' });
    expect(await waitFor('picky bound', () => nodeOf('picky'))).to.equal('n3');
  });

  it('the API server refuses to bind a pod twice (409), as upstream', async () => {
    await addPod('bound', 'n1');
    const err = await core
      .createNamespacedPodBinding({
        name: 'bound',
        namespace: 'default',
        body: { metadata: { name: 'bound' }, target: { kind: 'Node', name: 'n2' } },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(apiErrorInfo(err).statusCode).to.equal(409);
    expect(await nodeOf('bound')).to.equal('n1');
    const bad = await core
      .createNamespacedPodBinding({
        name: 'web',
        namespace: 'default',
        body: { metadata: { name: 'web' }, target: { kind: 'Service', name: 'x' } },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(apiErrorInfo(bad).statusCode).to.equal(400);
  });
});
