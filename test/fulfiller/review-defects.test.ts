// The three ways a review found for an address to end up on two nodes or be
// lost (docs/design/fulfiller.md#review-defects), each over real HTTP against the local API server:
// 1. an NNC deleted while its Node still exists freed every address it held;
// 2. (in stale-events.test.ts: a late watch event re-marking a freed address);
// 3. two fulfiller replicas each kept their own pool and handed out the same
//    addresses.
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import type { RunningFulfiller, StartFulfillerOptions } from '../../src/fulfiller/run.ts';
import { loadKubeConfig } from '../../src/kube/config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import { startRecordingProxy } from '../support/recording-proxy.ts';
import type { RecordingProxy } from '../support/recording-proxy.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { addressesOf, NNC } from '../support/test-cluster.ts';
import { waitFor } from '../support/wait.ts';

describe('fulfiller over HTTP: no address lost or on two nodes', function () {
  this.timeout(30_000);
  let cluster: StrictCluster;
  let server: ApiServer;
  const running: RunningFulfiller[] = [];
  const proxies: RecordingProxy[] = [];

  const config = (overrides: Partial<FulfillerConfig> = {}): FulfillerConfig =>
    makeFulfillerConfig({
      subnet: '10.240.0.0/27',
      subnetName: 'pods',
      minIntervalMs: 0,
      exhaustionThreshold: 0,
      recoveryMargin: 0,
      backoff: { initialMs: 20, maxMs: 200 },
      ...overrides,
    });
  const start = async (options: Partial<StartFulfillerOptions> = {}): Promise<RunningFulfiller> => {
    const r = await startFulfiller({
      kc: options.kc ?? (await cluster.fulfillerKubeConfig()),
      config: config(),
      logger: silentLogger(),
      ...options,
    });
    running.push(r);
    return r;
  };
  const get = (name: string) => cluster.getNnc(name);
  const createNode = (name: string) =>
    cluster.addNode(name, { labels: { 'kubernetes.io/hostname': name } });
  /** Creates the NNC unless the fulfiller already did, then sets its spec. */
  const setSpec = (name: string, spec: Record<string, unknown>) =>
    cluster.setSpec(name, spec, { create: true });
  const settled = (name: string, n: number) => cluster.nncWithIps(name, n);

  beforeEach(async () => {
    cluster = await strictCluster();
    ({ server } = cluster);
  });

  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    for (const p of proxies.splice(0)) await p.close();
    await cluster.close();
  });

  // The review's defect 1 (docs/design/fulfiller.md#review-defects).
  it('an NNC deleted under a live Node keeps its addresses and is recreated with them', async () => {
    await createNode('node-a');
    await createNode('node-b');
    await setSpec('node-a', { requestedIPCount: 8 });
    await setSpec('node-b', { requestedIPCount: 0 });
    await start();
    const a = await settled('node-a', 8);
    const held = addressesOf(a);
    expect(held).to.have.length(9);

    await cluster.objects.deleteNamespacedCustomObject({ ...NNC, name: 'node-a' });
    // node-b now asks for more than the /27 has left (27 usable, 9 held by node-a).
    await setSpec('node-b', { requestedIPCount: 26 });
    const b = await waitFor('node-b served', async () => {
      const o = await get('node-b');
      const done = o?.status?.status === 'SubnetFull' || o?.status?.status === 'Updated';
      return done && addressesOf(o).length >= 18 ? o : undefined;
    });
    const taken = addressesOf(b).filter((ip) => held.includes(ip));
    expect(taken, 'addresses of the deleted NNC handed to node-b').to.deep.equal([]);
    expect(addressesOf(b)).to.have.length(18);

    const back = await waitFor('node-a recreated', async () => {
      const o = await get('node-a');
      return addressesOf(o).length === 9 ? o : undefined;
    });
    expect(addressesOf(back).sort()).to.deep.equal([...held].sort());
    expect(dynamicContainers(back)[0]!.ipAssignments).to.deep.equal(
      dynamicContainers(a)[0]!.ipAssignments,
    );
  });

  // The review's defect 3 (docs/design/fulfiller.md#review-defects).
  it('two replicas never hand out one address twice; only the leader writes', async () => {
    const leases = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
    for (const id of ['replica-a', 'replica-b']) {
      // Each replica as the fulfiller's service account, through its own proxy.
      const proxy = await startRecordingProxy(server, await cluster.access.token('fulfiller'));
      proxies.push(proxy);
      const own = loadKubeConfig({ kubeconfig: proxy.kubeconfigPath }).kc;
      await start({
        kc: own,
        config: config({ subnet: '10.240.0.0/24' }),
        leaderElection: { identity: id, ...leases },
      });
    }
    const nodes = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
    for (const n of nodes) await createNode(n);
    await Promise.all(nodes.map((n) => setSpec(n, { requestedIPCount: 12 })));
    const filled = await Promise.all(nodes.map((n) => settled(n, 12)));
    const all = filled.flatMap(addressesOf);
    expect(all).to.have.length(nodes.length * 13);
    expect(new Set(all).size, 'an address on two NNCs').to.equal(all.length);
    const writers = proxies.filter((p) => p.writes().some((w) => !w.path.includes('/leases')));
    expect(writers, 'replicas that wrote NNCs, CSSs or Events').to.have.length(1);
  });
});
