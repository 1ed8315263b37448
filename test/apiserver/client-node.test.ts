// @kubernetes/client-node 2.x against a running server: informers (ListWatch)
// with label and field selectors, reconnects after dropped watches and 410
// Gone, and server-side apply as the node agent does it.
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  ListWatch,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { withCrds } from './helpers.ts';
import { GROUP, NNC_KIND, NNC_PLURAL, NNC_VERSION } from '../../src/nnc/types.ts';

const G = GROUP;
const V = NNC_VERSION;
const NS = 'kube-system';
const P = NNC_PLURAL;

async function until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('cluster: @kubernetes/client-node', function () {
  this.timeout(20_000);
  let server: ApiServer;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  beforeEach(async () => {
    server = await withCrds();
    kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
  });
  afterEach(() => server.close());

  const apply = (
    name: string,
    requestedIPCount: number,
    ipsNotInUse: string[] = [],
  ): Promise<unknown> =>
    custom.patchNamespacedCustomObject(
      {
        group: G,
        version: V,
        namespace: NS,
        plural: P,
        name,
        body: {
          apiVersion: `${G}/${V}`,
          kind: NNC_KIND,
          metadata: { name, namespace: NS },
          spec: { requestedIPCount, ipsNotInUse },
        },
        fieldManager: 'azure-cns',
        force: true,
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );

  it('server-side apply as azure-cns creates, updates and owns the NNC spec', async () => {
    await apply('node-1', 16, ['a', 'b']);
    await apply('node-1', 8);
    const got = (await custom.getNamespacedCustomObject({
      group: G,
      version: V,
      namespace: NS,
      plural: P,
      name: 'node-1',
    })) as {
      spec: { requestedIPCount: number; ipsNotInUse: string[] };
      metadata: { managedFields: { manager: string; operation: string }[] };
    };
    expect(got.spec).to.deep.equal({ requestedIPCount: 8, ipsNotInUse: [] });
    expect(got.metadata.managedFields.map((m) => `${m.manager}/${m.operation}`)).to.deep.equal([
      'azure-cns/Apply',
    ]);
    expect(server.counters().count('patch', P)).to.equal(2);
  });

  it('an NNC informer sees adds, updates and deletes, and recovers from dropped watches and 410 Gone', async () => {
    const path = `/apis/${G}/${V}/namespaces/${NS}/${P}`;
    const informer = new ListWatch<KubernetesObject & { spec?: { requestedIPCount?: number } }>(
      path,
      new Watch(kc),
      () =>
        custom.listNamespacedCustomObject({
          group: G,
          version: V,
          namespace: NS,
          plural: P,
          labelSelector: 'pool=a',
        }) as never,
      false,
      'pool=a',
    );
    const seen: string[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name} ${o.spec?.requestedIPCount}`));
    informer.on('update', (o) =>
      seen.push(`update ${o.metadata?.name} ${o.spec?.requestedIPCount}`),
    );
    informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
    const body = (name: string, n: number, pool: string): object => ({
      apiVersion: `${G}/${V}`,
      kind: NNC_KIND,
      metadata: { name, namespace: NS, labels: { pool } },
      spec: { requestedIPCount: n },
    });
    await custom.createNamespacedCustomObject({
      group: G,
      version: V,
      namespace: NS,
      plural: P,
      body: body('a1', 1, 'a'),
    });
    await custom.createNamespacedCustomObject({
      group: G,
      version: V,
      namespace: NS,
      plural: P,
      body: body('b1', 1, 'b'),
    });
    await informer.start();
    await until(() => informer.list().length === 1, 'initial list');
    await custom.patchNamespacedCustomObject(
      {
        group: G,
        version: V,
        namespace: NS,
        plural: P,
        name: 'a1',
        body: { spec: { requestedIPCount: 2 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(() => seen.includes('update a1 2'), 'update over watch');
    // The watch drops: the informer reconnects from its last resourceVersion.
    server.faults.dropWatches(P);
    await custom.patchNamespacedCustomObject(
      {
        group: G,
        version: V,
        namespace: NS,
        plural: P,
        name: 'a1',
        body: { spec: { requestedIPCount: 3 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(() => seen.includes('update a1 3'), 'update after reconnect');
    // History is forgotten and the watch drops: the resume gets 410, the informer relists.
    server.faults.compactHistory();
    server.faults.dropWatches(P);
    await custom.deleteNamespacedCustomObject({
      group: G,
      version: V,
      namespace: NS,
      plural: P,
      name: 'a1',
    });
    await until(() => informer.list().length === 0, 'delete seen after 410 relist');
    await informer.stop();
    expect(seen.filter((s) => s.startsWith('add'))).to.deep.equal(['add a1 1']);
    expect(seen.some((s) => s.includes('b1'))).to.equal(false);
  });

  it('a pod informer with a field selector follows phase changes on one node', async () => {
    const pod = (name: string, node: string): V1Pod => ({
      metadata: { name },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'i' }] },
    });
    await core.createNamespacedPod({ namespace: 'default', body: pod('p1', 'n1') });
    await core.createNamespacedPod({ namespace: 'default', body: pod('p2', 'n2') });
    const informer = new ListWatch<V1Pod>(
      '/api/v1/pods',
      new Watch(kc),
      () =>
        core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1,status.phase!=Succeeded' }),
      false,
      undefined,
      'spec.nodeName=n1,status.phase!=Succeeded',
    );
    await informer.start();
    await until(() => informer.list().length === 1, 'initial pods');
    await core.createNamespacedPod({ namespace: 'default', body: pod('p3', 'n1') });
    await until(() => informer.list().length === 2, 'new pod');
    await core.patchNamespacedPodStatus(
      { namespace: 'default', name: 'p1', body: { status: { phase: 'Succeeded' } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    await until(() => informer.list().length === 1, 'completed pod leaves the selector');
    expect(informer.list().map((p) => p.metadata?.name)).to.deep.equal(['p3']);
    await informer.stop();
  });
});
