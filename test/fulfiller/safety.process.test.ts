// Address safety by construction (docs/decisions/0036), the two fulfiller
// defects of issue 53, each through real `bin/pool-monitor fulfiller`
// processes against the local API server (RBAC and its garbage collector
// on, the pod GC off: the pods stay until a test removes them):
// - a standby that watched a Node go, its NNC quarantined and released,
//   leads after the Node came back under its name and was served again: it
//   must not write what it remembers of the first Node over the live one
//   (the old standby kept the first Node's addresses and, once leading,
//   "restored" them over the new NNC's status; its pod's addresses left it);
// - a release whose answer is lost (the finalizer patch applied, answered
//   504): the Node that comes back, is served, has a pod and is deleted
//   again is quarantined again (the old leader kept the first quarantine's
//   record by name and released the second at once).
import type { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { dynamicContainers, NNC_PLURAL } from '../../src/nnc/types.ts';
import {
  elected,
  leaderElectFlags,
  leaseHolder,
  startReplica,
  stopReplicas,
  type LeaseTimings,
  type Replica,
} from '../support/fulfiller-process.ts';
import { spawnFulfiller, type FulfillerProcess } from '../support/fulfiller-process.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { addressesOf, NNC } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

const FAST: LeaseTimings = { lease: 3000, renew: 2000, retry: 500 };

/** Addresses held by more than one NNC. */
function shared(nncs: NodeNetworkConfig[]): string[] {
  const seen = new Map<string, string>();
  const out: string[] = [];
  for (const o of nncs)
    for (const ip of addressesOf(o)) {
      const other = seen.get(ip);
      if (other !== undefined && other !== o.metadata.name)
        out.push(`${ip}: ${other}, ${o.metadata.name}`);
      seen.set(ip, o.metadata.name);
    }
  return out;
}

describe('fulfiller processes: one record per Node incarnation (issue 53)', function () {
  this.timeout(120_000);
  let cluster: StrictCluster;
  let core: CoreV1Api;
  const replicas: Replica[] = [];
  const procs: FulfillerProcess[] = [];
  const seen: string[] = [];
  let watcher: NodeJS.Timeout | undefined;

  const get = (name: string) => cluster.getNnc(name);
  const all = async () =>
    ((await cluster.objects.listNamespacedCustomObject(NNC)) as { items: NodeNetworkConfig[] })
      .items;
  const served = (name: string, n: number) => cluster.nncWithIps(name, n, 30_000);
  const pod = (name: string, node: string) =>
    core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name },
        spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
      },
    });

  beforeEach(async () => {
    cluster = await strictCluster({ garbageCollector: true, podGcOrphanMs: 600_000 });
    core = cluster.core;
    seen.length = 0;
    watcher = setInterval(() => {
      all().then(
        (items) => seen.push(...shared(items).filter((d) => !seen.includes(d))),
        () => {},
      );
    }, 100);
  });

  afterEach(async () => {
    clearInterval(watcher);
    await stopReplicas(replicas.splice(0));
    for (const p of procs.splice(0)) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await cluster.close();
  });

  it('a Node that comes back under its name keeps its live addresses across a leader handover', async () => {
    const token = await cluster.access.token('fulfiller');
    for (const name of ['replica-a', 'replica-b']) {
      const args = ['--subnet', '10.240.0.0/26', '--quarantine', '3', ...leaderElectFlags(FAST)];
      replicas.push(await startReplica(cluster.server, token, name, args, () => 'forward'));
    }
    const [leader, standby] = await elected(cluster.kc, replicas);
    await waitFor(
      'the standby ready',
      async () => (await fetch(`${await standby.proc.url()}/readyz`)).ok,
      15_000,
    );
    // node-a is served, deleted (no pod: its quarantine ends at the first look), released.
    await cluster.addNode('node-a');
    await cluster.setSpec('node-a', { requestedIPCount: 8 });
    const first = await served('node-a', 8);
    await core.deleteNode({ name: 'node-a' });
    await waitFor(
      'the first node-a NNC released',
      async () => ((await get('node-a'))?.metadata.uid === first.metadata.uid ? undefined : true),
      30_000,
    );
    // node-a registers again (a kubelet re-registering, a reused VM name) and is served anew.
    await cluster.addNode('node-a');
    await waitFor('the second node-a NNC', async () => {
      const o = await get('node-a');
      return o && o.metadata.uid !== first.metadata.uid ? o : undefined;
    });
    await cluster.setSpec('node-a', { requestedIPCount: 8 });
    const live = await served('node-a', 8);
    await pod('pod-a', 'node-a');
    const liveIps = addressesOf(live);
    // The leader dies; the standby, which watched all of it, leads.
    leader.proc.child.kill('SIGKILL');
    await waitFor(
      'the standby leads',
      async () => (await leaseHolder(cluster.kc))?.startsWith(`${standby.proc.name}_`),
      15_000,
    );
    await standby.proc.waitLog('fulfiller leads', 15_000);
    // Another node takes what is free: nothing of node-a's may go to it.
    await cluster.addNode('node-b');
    await cluster.setSpec('node-b', { requestedIPCount: 48 });
    await waitFor(
      'node-b served or short',
      async () => {
        const o = await get('node-b');
        return (
          o?.status?.status === 'SubnetFull' ||
          dynamicContainers(o ?? { metadata: { name: '' } })[0]?.ipAssignments?.length === 48
        );
      },
      30_000,
    );
    await sleep(1000);
    const now = await get('node-a');
    expect(now?.metadata.uid).to.equal(live.metadata.uid);
    expect(addressesOf(now), "node-a's live addresses").to.include.members(liveIps);
    expect(seen, 'addresses on two NNCs').to.deep.equal([]);
  });

  it('a deleted node whose release answer was lost is quarantined again on its next deletion', async () => {
    const kubeconfig = await cluster.kubeconfigFile('fulfiller');
    const p = spawnFulfiller('f1', [
      ...['--kubeconfig', kubeconfig, '--subnet', '10.240.0.0/26', '--leader-elect', 'false'],
      ...['--quarantine', '600', '--exhaustion-threshold', '0'],
    ]);
    procs.push(p);
    await p.waitLog('fulfiller leads', 20_000);
    await cluster.addNode('node-a');
    await cluster.setSpec('node-a', { requestedIPCount: 8 });
    const first = await served('node-a', 8);
    // Deleted without a pod: its quarantine ends at the first look for pods.
    // The finalizer patch that lets its NNC go is applied, but its answer is lost.
    cluster.server.faults.inject({
      verb: 'patch',
      resource: NNC_PLURAL,
      status: 504,
      afterCommit: true,
    });
    await core.deleteNode({ name: 'node-a' });
    await waitFor(
      'the first node-a NNC gone',
      async () => ((await get('node-a')) ? undefined : true),
      40_000,
    );
    await p.waitLog('node action failed', 5_000);
    // node-a comes back, is served, runs a pod, and is deleted again.
    await cluster.addNode('node-a');
    await waitFor('the second node-a NNC', async () => {
      const o = await get('node-a');
      return o && o.metadata.uid !== first.metadata.uid ? o : undefined;
    });
    await cluster.setSpec('node-a', { requestedIPCount: 8 });
    const second = await served('node-a', 8);
    await pod('pod-a', 'node-a');
    await core.deleteNode({ name: 'node-a' });
    // Its pod is bound: the NNC stays, terminating, holding its addresses.
    await waitFor(
      'the second NNC terminating',
      async () => (await get('node-a'))?.metadata.deletionTimestamp,
    );
    await sleep(8000); // longer than a pod look (5 s) and the first quarantine's long-past end
    const kept = await get('node-a');
    expect(kept?.metadata.uid, 'the second NNC is still there').to.equal(second.metadata.uid);
    expect(addressesOf(kept)).to.include.members(addressesOf(second));
    // Another node asks for everything: none of node-a's addresses may reach it.
    await cluster.addNode('node-b');
    await cluster.setSpec('node-b', { requestedIPCount: 60 });
    await waitFor(
      'node-b short',
      async () => (await get('node-b'))?.status?.status === 'SubnetFull',
      30_000,
    );
    expect(
      addressesOf(await get('node-b')).filter((ip) => addressesOf(second).includes(ip)),
    ).to.deep.equal([]);
    expect(seen).to.deep.equal([]);
  });
});
