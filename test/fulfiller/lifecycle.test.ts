// The NNC lifecycle over real HTTP against the local API server: the
// fulfiller creates the NNC of every selected Node (owned by it, scaler from
// the flags, maxIPCount capped at the Node's allocatable pods), deletes it
// with its Node and keeps its addresses while a pod is bound to it (at most
// the grace period), then makes them reusable, and deletes NNCs whose Node
// is gone at start.
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import { ADDRESSES_FINALIZER as FINALIZER } from '../../src/fulfiller/quarantine.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { addressesOf, NNC, NS } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

describe('fulfiller: the NNC lifecycle over HTTP', function () {
  this.timeout(30_000);
  let cluster: StrictCluster;
  let api: CustomObjectsApi;
  let core: CoreV1Api;
  const running: RunningFulfiller[] = [];

  const start = async (overrides: Partial<FulfillerConfig> = {}) => {
    const config = makeFulfillerConfig({
      subnet: '10.240.0.0/27',
      subnetName: 'pods',
      minIntervalMs: 0,
      exhaustionThreshold: 0,
      recoveryMargin: 0,
      backoff: { initialMs: 20, maxMs: 200 },
      scaler: {
        batchSize: 8,
        requestThresholdPercent: 50,
        releaseThresholdPercent: 150,
        maxIPCount: 64,
      },
      ...overrides,
    });
    const own = await cluster.fulfillerKubeConfig();
    const r = await startFulfiller({
      kc: own,
      config,
      logger: silentLogger(),
      defaultMetrics: false,
    });
    running.push(r);
    return r;
  };
  const get = (name: string) => cluster.getNnc(name);
  const createNode = (name: string, labels: Record<string, string> = {}, pods?: string) =>
    cluster.addNode(name, {
      labels,
      ...(pods === undefined ? {} : { allocatablePods: pods, internalIP: '10.224.0.9' }),
    });
  const setRequest = (name: string, requestedIPCount: number) =>
    cluster.setSpec(name, { requestedIPCount });
  const served = (name: string, n: number) => cluster.nncWithIps(name, n);

  beforeEach(async () => {
    cluster = await strictCluster();
    ({ objects: api, core } = cluster);
  });

  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    await cluster.close();
  });

  it('creates the NNC of each selected Node, owned by it, maxIPCount capped at its allocatable pods', async () => {
    await start({ nodeSelector: 'pool=pods' });
    const node = await createNode('node-a', { pool: 'pods' }, '20');
    await createNode('node-b', { pool: 'pods' });
    await createNode('node-other', { pool: 'system' });
    const a = await waitFor('node-a NNC with a container, capped at 20', async () => {
      const o = await get('node-a');
      return o && dynamicContainers(o).length === 1 && o.status?.scaler?.maxIPCount === 20
        ? o
        : undefined;
    });
    expect(a.metadata).to.deep.include({ namespace: NS, finalizers: [FINALIZER] });
    expect((a.metadata as { ownerReferences?: unknown[] }).ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: node.metadata!.uid },
    ]);
    expect(a.status?.scaler).to.deep.equal({
      batchSize: 8,
      requestThresholdPercent: 50,
      releaseThresholdPercent: 150,
      maxIPCount: 20,
    });
    expect(dynamicContainers(a)[0]!.nodeIP).to.equal('10.224.0.9');
    const b = await waitFor('node-b NNC', async () => (await get('node-b'))?.status?.scaler);
    expect(b.maxIPCount).to.equal(64);
    await sleep(200);
    expect(await get('node-other'), 'a Node outside --node-selector').to.equal(undefined);
    // The cap holds for requests too: node-a never gets more than its 20 pods.
    await setRequest('node-a', 30);
    await served('node-a', 20);
  });

  // The quarantine's record is the NNC itself, kept terminating by the
  // fulfiller's finalizer (docs/design/fulfiller.md#quarantine).
  const quarantined = (name: string) =>
    waitFor(`${name} terminating, held by the addresses finalizer`, async () => {
      const o = await get(name);
      return o?.metadata.deletionTimestamp && o.metadata.finalizers?.includes(FINALIZER)
        ? o
        : undefined;
    });
  const gone = (name: string) =>
    waitFor(`${name} NNC gone`, async () => ((await get(name)) ? undefined : true));

  /**
   * node-b asks for more than the /27 has beside node-a's held addresses:
   * it ends short (SubnetFull) with none of them. The short status.
   */
  const nodeBShortWithout = async (held: Set<string>, what: string) => {
    await setRequest('node-b', 26);
    const short = await waitFor('node-b short', async () => {
      const o = await get('node-b');
      return o?.status?.status === 'SubnetFull' ? o : undefined;
    });
    expect(
      addressesOf(short).filter((ip) => held.has(ip)),
      what,
    ).to.deep.equal([]);
    return short;
  };

  // A pod bound to the node's name (as the kubelet's pods are): the pod GC has not removed it yet.
  const bindPod = (name: string, nodeName: string) =>
    core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name }, spec: { nodeName, containers: [{ name: 'c', image: 'x' }] } },
    });

  it('a deleted Node takes its NNC with it; its addresses are quarantined while its pod stays, then serve other nodes once the grace is over', async () => {
    await createNode('node-a');
    await createNode('node-b');
    await bindPod('on-a', 'node-a');
    // Long enough that a loaded machine sees node-b short while it holds.
    await start({ quarantineMs: 4000, quarantinePodCheckMs: 100 });
    await waitFor('NNCs', async () => (await get('node-a')) && (await get('node-b')));
    await setRequest('node-a', 20);
    const a = await served('node-a', 20);
    const held = new Set(addressesOf(a));
    await core.deleteNode({ name: 'node-a' });
    await quarantined('node-a');
    // /27: 27 usable, node-a's 21 quarantined, node-b's primary: 5 are free.
    await nodeBShortWithout(held, 'quarantined, handed out');
    // The quarantine over, they serve node-b.
    const b = await cluster.nncWithIps('node-b', 26, 15_000);
    const reused = b.status!.networkContainers![0]!.ipAssignments!.filter((x) => held.has(x.ip));
    expect(reused.length).to.be.at.least(20);
    await gone('node-a');
  });

  it('the quarantine ends early once no pod is bound to the deleted node (the pod GC removed them), long before its grace', async () => {
    await createNode('node-a');
    await createNode('node-b');
    await bindPod('on-a', 'node-a');
    await start({ quarantineMs: 600_000, quarantinePodCheckMs: 100 });
    await waitFor('NNCs', async () => (await get('node-a')) && (await get('node-b')));
    await setRequest('node-a', 20);
    const held = new Set(addressesOf(await served('node-a', 20)));
    await core.deleteNode({ name: 'node-a' });
    await quarantined('node-a');
    await setRequest('node-b', 26);
    await waitFor(
      'node-b short',
      async () => (await get('node-b'))?.status?.status === 'SubnetFull',
    );
    await sleep(300); // a few looks at the pods: one is still bound, the quarantine holds
    expect((await get('node-a'))?.metadata.finalizers).to.include(FINALIZER);
    // The pod GC deletes the pod bound to the missing node.
    await core.deleteNamespacedPod({ name: 'on-a', namespace: 'default' });
    const b = await served('node-b', 26);
    expect(
      b.status!.networkContainers![0]!.ipAssignments!.filter((x) => held.has(x.ip)).length,
    ).to.be.at.least(20);
    await gone('node-a');
  });

  it('a deleted Node that re-registers gets its addresses back, even across a fulfiller restart', async () => {
    await createNode('node-a');
    await createNode('node-b');
    await bindPod('on-a', 'node-a');
    const first = await start({ quarantineMs: 60_000 });
    await waitFor('NNCs', async () => (await get('node-a')) && (await get('node-b')));
    await setRequest('node-a', 12);
    const a = await served('node-a', 12);
    await core.deleteNode({ name: 'node-a' });
    const old = await quarantined('node-a');
    // The fulfiller restarts: the quarantine is read back from the cluster.
    await first.stop();
    running.splice(running.indexOf(first), 1);
    await start({ quarantineMs: 60_000 });
    await nodeBShortWithout(new Set(addressesOf(a)), 'quarantined, handed out');
    // The kubelet re-registers node-a: its terminating NNC is let go and a
    // new one comes back with its addresses, as they were.
    await createNode('node-a');
    const back = await waitFor('node-a restored', async () => {
      const o = await get('node-a');
      return o?.metadata.uid !== old.metadata.uid && addressesOf(o).length === 13 ? o : undefined;
    });
    expect(dynamicContainers(back)[0]!.ipAssignments).to.deep.equal(
      dynamicContainers(a)[0]!.ipAssignments,
    );
    expect(back.metadata.deletionTimestamp).to.equal(undefined);
    expect(back.metadata.finalizers).to.deep.equal([FINALIZER]);
  });

  // kube-controller-manager's garbage collector deletes an NNC moments after
  // its owner Node, whether or not a fulfiller runs (docs/design/fulfiller.md#quarantine).
  it('a Node and its NNC deleted while no fulfiller runs (the garbage collector): its addresses stay held while its pod is bound', async () => {
    await createNode('node-a');
    await createNode('node-b');
    await bindPod('on-a', 'node-a');
    const first = await start({ quarantineMs: 60_000, quarantinePodCheckMs: 100 });
    await waitFor('NNCs', async () => (await get('node-a')) && (await get('node-b')));
    await setRequest('node-a', 20);
    const held = new Set(addressesOf(await served('node-a', 20)));
    await first.stop();
    running.splice(running.indexOf(first), 1);
    await core.deleteNode({ name: 'node-a' });
    await api.deleteNamespacedCustomObject({ ...NNC, name: 'node-a' });
    await start({ quarantineMs: 60_000, quarantinePodCheckMs: 100 });
    await nodeBShortWithout(held, "a deleted node's addresses handed out while its pod is bound");
    // Its pod gone, the addresses serve node-b and the NNC is gone for good.
    await core.deleteNamespacedPod({ name: 'on-a', namespace: 'default' });
    const b = await served('node-b', 26);
    expect(addressesOf(b).filter((ip) => held.has(ip)).length).to.be.at.least(20);
    await waitFor('node-a NNC gone', async () => ((await get('node-a')) ? undefined : true));
  });

  it('an NNC deleted moments after its Node while the fulfiller runs: its addresses stay held while its pod is bound', async () => {
    await createNode('node-a');
    await createNode('node-b');
    await bindPod('on-a', 'node-a');
    await start({ quarantineMs: 60_000, quarantinePodCheckMs: 100 });
    await waitFor('NNCs', async () => (await get('node-a')) && (await get('node-b')));
    await setRequest('node-a', 20);
    const held = new Set(addressesOf(await served('node-a', 20)));
    await core.deleteNode({ name: 'node-a' });
    await api.deleteNamespacedCustomObject({ ...NNC, name: 'node-a' }).catch(() => undefined);
    const short = await nodeBShortWithout(
      held,
      "a deleted node's addresses handed out while its pod is bound",
    );
    await sleep(300);
    expect(
      addressesOf(await get('node-b')).filter((ip) => held.has(ip)),
      "a deleted node's addresses handed out while its pod is bound",
    ).to.deep.equal([]);
    expect(short.metadata.name).to.equal('node-b');
  });

  // A 409 on a lifecycle write is retried by the queue, not left to a watch
  // event that may never come (the chaos e2e's injected 409s left a node's
  // NNC terminating under its live Node until the next leader, 20 s on).
  it('an NNC deleted under a live Node whose finalizer patch is answered 409 is still recreated, without waiting for the resync', async () => {
    await createNode('node-a');
    await start({ resyncMs: 600_000 });
    await waitFor('NNC', () => get('node-a'));
    await setRequest('node-a', 8);
    const before = await served('node-a', 8);
    cluster.server.faults.inject({ verb: 'patch', resource: 'nodenetworkconfigs', status: 409 });
    await api.deleteNamespacedCustomObject({ ...NNC, name: 'node-a' });
    const after = await waitFor(
      'node-a recreated',
      async () => {
        const n = await get('node-a');
        return n && n.metadata.uid !== before.metadata.uid && !n.metadata.deletionTimestamp
          ? n
          : undefined;
      },
      10_000,
    );
    expect(after.metadata.name).to.equal('node-a');
    const conflicts = cluster.server
      .counters()
      .entries()
      .filter((e) => e.verb === 'patch' && e.resource === 'nodenetworkconfigs' && e.code === 409);
    expect(conflicts.map((e) => e.count)).to.deep.equal([1]);
  });

  it('at start, an NNC whose Node is gone is deleted; one of a live Node is kept as it is', async () => {
    await createNode('alive');
    for (const name of ['alive', 'ghost']) await cluster.createNnc(name, { requestedIPCount: 4 });
    await start();
    await waitFor('ghost deleted', async () => ((await get('ghost')) ? undefined : true));
    const alive = await served('alive', 4);
    expect(alive.metadata.name).to.equal('alive');
  });
});
