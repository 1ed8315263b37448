// A deleted Node's addresses stay held while its pods are bound, whoever
// deletes its NNC and whatever fails when (docs/design/fulfiller.md#quarantine,
// docs/decisions/0030): `bin/pool-monitor fulfiller` against the local API
// server with RBAC and its garbage collector on (the NNCs are owned by their
// Nodes, so the collector deletes them right after the Node, as
// kube-controller-manager does). Ten Nodes with a pod bound to each; eight
// are deleted; the two left then ask for more than the subnet has beside the
// deleted nodes' addresses, so any address freed too early would show up on
// them.
import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { ADDRESSES_FINALIZER } from '../../src/fulfiller/quarantine.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { NNC_PLURAL, dynamicContainers } from '../../src/nnc/types.ts';
import { spawnFulfiller } from '../support/fulfiller-process.ts';
import type { FulfillerProcess } from '../support/fulfiller-process.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { addressesOf, NNC } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

const NODES = Array.from({ length: 10 }, (_, i) => `node-${i}`);
const DELETED = NODES.slice(0, 8);
const KEPT = NODES.slice(8);

describe('fulfiller process: deleted Nodes, their NNCs deleted by the garbage collector', function () {
  this.timeout(90_000);
  let cluster: StrictCluster;
  let api: CustomObjectsApi;
  let core: CoreV1Api;
  const procs: FulfillerProcess[] = [];

  const start = async (name: string): Promise<FulfillerProcess> => {
    const kubeconfig = await cluster.kubeconfigFile('fulfiller');
    // /24: 253 usable. Ten nodes of 16 IPs and a primary: 170; the two
    // kept nodes then ask for 64 each, which fits only if some of the
    // deleted nodes' 136 come free.
    const p = spawnFulfiller(name, [
      ...['--kubeconfig', kubeconfig, '--subnet', '10.240.0.0/24', '--subnet-name', 'pods'],
      ...['--batch', '8', '--quarantine', '600', '--leader-elect', 'false'],
      ...['--exhaustion-threshold', '0'],
    ]);
    procs.push(p);
    await p.waitLog('fulfiller leads', 20_000);
    return p;
  };
  const stop = async (p: FulfillerProcess): Promise<void> => {
    p.child.kill('SIGTERM');
    expect(await p.exited, p.output()).to.equal(0);
    procs.splice(procs.indexOf(p), 1);
  };
  const get = (name: string) => cluster.getNnc(name);
  const setRequest = (name: string, requestedIPCount: number) =>
    cluster.setSpec(name, { requestedIPCount });
  const served = (name: string, n: number) => cluster.nncWithIps(name, n, 30_000);

  /** Ten Nodes with a pod each, every NNC with 16 IPs: the deleted ones' addresses. */
  const fill = async (): Promise<Set<string>> => {
    await waitFor('every NNC', async () => (await Promise.all(NODES.map(get))).every(Boolean));
    for (const n of NODES) await setRequest(n, 16);
    const held = new Set<string>();
    for (const n of NODES) {
      const o = await served(n, 16);
      if (DELETED.includes(n)) for (const ip of addressesOf(o)) held.add(ip);
    }
    return held;
  };
  const deleteNodes = async (): Promise<void> => {
    await Promise.all(DELETED.map((name) => core.deleteNode({ name })));
  };
  /** Every deleted node's NNC terminating, kept by the finalizer: the garbage collector was there. */
  const terminating = () =>
    waitFor(
      "the deleted nodes' NNCs terminating",
      async () => {
        const all = await Promise.all(DELETED.map(get));
        return all.every(
          (o) =>
            o?.metadata.deletionTimestamp && o.metadata.finalizers?.includes(ADDRESSES_FINALIZER),
        );
      },
      20_000,
    );
  /** The kept nodes ask for more than fits beside the deleted ones' addresses: none of those may reach them. */
  const noneHandedOut = async (held: Set<string>): Promise<void> => {
    for (const n of KEPT) await setRequest(n, 64);
    await waitFor(
      'the kept nodes short of addresses',
      async () => {
        const all = await Promise.all(KEPT.map(get));
        return all.some((o) => o?.status?.status === 'SubnetFull');
      },
      30_000,
    );
    await sleep(500);
    for (const n of KEPT) {
      const on = addressesOf(await get(n)).filter((ip) => held.has(ip));
      expect(on, `a deleted node's addresses on ${n} while its pod is bound`).to.deep.equal([]);
    }
  };
  /** The pods go (the pod GC): the quarantine ends, the NNCs go, their addresses serve the kept nodes. */
  const podsGoThenServed = async (held: Set<string>): Promise<void> => {
    await Promise.all(
      DELETED.map((n) => core.deleteNamespacedPod({ name: `pod-${n}`, namespace: 'default' })),
    );
    const reused = new Set<string>();
    for (const n of KEPT)
      for (const ip of addressesOf(await served(n, 64))) if (held.has(ip)) reused.add(ip);
    expect(reused.size).to.be.greaterThan(0);
    await waitFor(
      "the deleted nodes' NNCs gone",
      async () => (await Promise.all(DELETED.map(get))).every((o) => !o),
      20_000,
    );
  };

  beforeEach(async () => {
    // The pod GC would delete the pods bound to the deleted Nodes after 40 s
    // and so end the quarantine early: these tests keep the pods until they say.
    cluster = await strictCluster({ garbageCollector: true, podGcOrphanMs: 600_000 });
    ({ objects: api, core } = cluster);
    for (const name of NODES) {
      await core.createNode({ body: { metadata: { name } } });
      await core.createNamespacedPod({
        namespace: 'default',
        body: {
          metadata: { name: `pod-${name}` },
          spec: { nodeName: name, containers: [{ name: 'c', image: 'x' }] },
        },
      });
    }
  });

  afterEach(async () => {
    for (const p of procs.splice(0)) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await cluster.close();
  });

  it('while the fulfiller runs: eight Nodes deleted, their addresses held until their pods are gone', async () => {
    await start('f1');
    const held = await fill();
    await deleteNodes();
    await terminating();
    await noneHandedOut(held);
    await podsGoThenServed(held);
  });

  it('while no fulfiller runs (a rollout, a crash): the NNCs wait, terminating, for the next one', async () => {
    const first = await start('f1');
    const held = await fill();
    await stop(first);
    await deleteNodes();
    await terminating();
    await start('f2');
    await noneHandedOut(held);
    await podsGoThenServed(held);
  });

  it("when the fulfiller's first deletion and finalizer writes fail: the same", async () => {
    await start('f1');
    const held = await fill();
    cluster.server.faults.inject({
      verb: 'delete',
      resource: NNC_PLURAL,
      status: 500,
      times: 3,
    });
    cluster.server.faults.inject({
      verb: 'patch',
      resource: NNC_PLURAL,
      status: 500,
      times: 3,
    });
    await deleteNodes();
    await terminating();
    await noneHandedOut(held);
    await podsGoThenServed(held);
  });

  // No record at all: a person removed the finalizers (the fulfiller's own
  // replace keeps the addresses on the Node meanwhile). The pods are then
  // the only record left (docs/design/fulfiller.md#pods-as-the-last-record).
  it('when the records are lost (NNCs gone, finalizers removed by hand): the addresses pods report stay theirs', async () => {
    const first = await start('f1');
    await fill();
    // Each deleted-list node's pod runs with the first address of its NNC.
    const podIp = new Map<string, string>();
    for (const n of DELETED) {
      const ip = dynamicContainers((await get(n))!)[0]!.ipAssignments![0]!.ip;
      podIp.set(n, ip);
      const pod = await core.readNamespacedPod({ name: `pod-${n}`, namespace: 'default' });
      await core.replaceNamespacedPodStatus({
        name: `pod-${n}`,
        namespace: 'default',
        body: { ...pod, status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } },
      });
    }
    await stop(first);
    // Half the Nodes live on (their NNC gone under them), half are deleted.
    const live = DELETED.slice(0, 4);
    const gone = DELETED.slice(4);
    await Promise.all(gone.map((name) => core.deleteNode({ name })));
    for (const name of DELETED) {
      await api.patchNamespacedCustomObject(
        { ...NNC, name, body: { metadata: { finalizers: null } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await api.deleteNamespacedCustomObject({ ...NNC, name }).catch(() => undefined);
    }
    await waitFor('the NNCs gone', async () =>
      (await Promise.all(DELETED.map(get))).every((o) => !o),
    );

    const second = await start('f2');
    // The kept nodes take everything free.
    for (const n of KEPT) await setRequest(n, 120);
    await waitFor(
      'the kept nodes served or short of addresses',
      async () => {
        const kept = await Promise.all(KEPT.map(get));
        const n = (o: NodeNetworkConfig | undefined) =>
          o ? (dynamicContainers(o)[0]?.ipAssignments?.length ?? 0) : 0;
        return (
          kept.some((o) => o?.status?.status === 'SubnetFull') || kept.every((o) => n(o) === 120)
        );
      },
      30_000,
    );
    const all = await api.listNamespacedCustomObject({ ...NNC });
    for (const o of (all as { items: NodeNetworkConfig[] }).items)
      for (const [n, ip] of podIp)
        if (o.metadata.name !== n)
          expect(addressesOf(o), `${n}'s pod address on ${o.metadata.name}`).not.to.include(ip);
    // A live node's new NNC holds its pod's address again.
    for (const n of live)
      await waitFor(`${n}'s pod address back in its NNC`, async () =>
        addressesOf(await get(n)).includes(podIp.get(n)!),
      );
    // The rescue says so, node by node (pod-rescue.ts).
    const rescued = second.lines.find(
      (l) => l.msg === 'addresses running pods hold were in no record: kept for their node',
    );
    expect(rescued?.node, 'a node whose addresses were rescued').to.be.oneOf(NODES);
    expect(rescued?.addresses).to.be.above(0);
  });
});
