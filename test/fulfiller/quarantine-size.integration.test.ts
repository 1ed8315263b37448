// The quarantine's record is bounded per node (docs/decisions/0030): 500
// deleted Nodes of 250 addresses each, their pods still bound, are 500
// terminating NNCs of one node's size each, not one list of every deleted
// node's containers (which was 1.6 MiB at 100 nodes, over etcd's default
// 1.5 MiB request limit). No object the cluster holds passes 1 MiB.
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { CSS_PLURAL, GROUP, NNC_PLURAL } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { NNC, NS } from '../support/test-cluster.ts';
import { waitFor } from '../support/wait.ts';

const NODES = 500;
const IPS = 250;
const MiB = 1024 * 1024;

describe('fulfiller: the quarantine of 500 deleted nodes of 250 addresses', function () {
  this.timeout(240_000);
  let cluster: StrictCluster;
  let fulfiller: RunningFulfiller | undefined;

  before(async () => {
    // The pod GC would delete the pods bound to the deleted Nodes after 40 s
    // and so end the quarantine early: these tests keep the pods until they say.
    cluster = await strictCluster({ garbageCollector: true, podGcOrphanMs: 600_000 });
  });

  after(async () => {
    await fulfiller?.stop();
    await cluster.close();
  });

  /** The largest object of the NNCs and ClusterSubnetStates, as stored, in bytes of JSON. */
  const largest = (): { bytes: number; what: string } => {
    let out = { bytes: 0, what: '' };
    for (const plural of [NNC_PLURAL, CSS_PLURAL])
      for (const o of cluster.server.objects(GROUP, plural, NS)) {
        const bytes = Buffer.byteLength(JSON.stringify(o));
        if (bytes > out.bytes) out = { bytes, what: `${plural}/${o.metadata?.name}` };
      }
    return out;
  };

  it('writes no object over 1 MiB, and holds every address while the pods are bound', async () => {
    const { core, objects: api } = cluster;
    const names = Array.from({ length: NODES }, (_, i) => `node-${i}`);
    const batches = <T>(items: T[], n: number): T[][] =>
      Array.from({ length: Math.ceil(items.length / n) }, (_, i) => items.slice(i * n, i * n + n));
    for (const batch of batches(names, 50))
      await Promise.all(
        batch.map(async (name) => {
          await core.createNode({ body: { metadata: { name } } });
          await core.createNamespacedPod({
            namespace: 'default',
            body: {
              metadata: { name: `pod-${name}` },
              spec: { nodeName: name, containers: [{ name: 'c', image: 'x' }] },
            },
          });
        }),
      );
    fulfiller = await startFulfiller({
      kc: await cluster.fulfillerKubeConfig(),
      // A /15: 131,070 addresses for 500 × 251.
      config: makeFulfillerConfig({
        subnet: '10.240.0.0/15',
        subnetName: 'pods',
        quarantineMs: 600_000,
        exhaustionThreshold: 0,
        recoveryMargin: 0,
        minIntervalMs: 0,
        workers: 16,
      }),
      logger: silentLogger(),
      defaultMetrics: false,
      leaderElection: false,
    });
    await waitFor(
      'every NNC',
      () => cluster.server.objects(GROUP, NNC_PLURAL, NS).length === NODES,
      60_000,
    );
    for (const batch of batches(names, 50))
      await Promise.all(
        batch.map((name) =>
          waitFor(`the spec of ${name}`, async () => {
            const cur = (await api.getNamespacedCustomObject({ ...NNC, name })) as object;
            await api.replaceNamespacedCustomObject({
              ...NNC,
              name,
              body: { ...cur, spec: { requestedIPCount: IPS } },
            });
            return true;
          }),
        ),
      );
    const filled = (o: object) =>
      ((o as NodeNetworkConfig).status?.networkContainers?.[0]?.ipAssignments?.length ?? 0) === IPS;
    await waitFor(
      'every NNC filled',
      () => cluster.server.objects(GROUP, NNC_PLURAL, NS).every(filled),
      120_000,
    );
    for (const batch of batches(names, 50))
      await Promise.all(batch.map((name) => core.deleteNode({ name })));
    await waitFor(
      'every NNC terminating (the garbage collector deleted them)',
      () =>
        cluster.server
          .objects(GROUP, NNC_PLURAL, NS)
          .every((o) => o.metadata?.deletionTimestamp !== undefined),
      60_000,
    );
    await fulfiller.fulfiller.whenIdle();
    const nncs = cluster.server.objects(GROUP, NNC_PLURAL, NS);
    expect(nncs, 'every deleted node keeps its record while its pod is bound').to.have.length(
      NODES,
    );
    expect(nncs.every(filled), 'no address freed while its pod is bound').to.equal(true);
    const big = largest();
    console.log(`      largest object: ${big.what}, ${(big.bytes / 1024).toFixed(1)} KiB`);
    expect(big.bytes, big.what).to.be.below(MiB);
  });
});
