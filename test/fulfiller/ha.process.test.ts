// docs/design/fulfiller.md#high-availability: two `bin/pool-monitor fulfiller` processes against the local API
// server (RBAC on, each replica through its own recording proxy), and the
// ways a handover could put one address on two NNCs:
// - the review's case: the standby's NNC reads fail for a while (its watch
//   cut and its re-lists refused by its proxy), the leader grows node-1 to
//   32 addresses and dies, three Nodes join, the standby takes the Lease.
//   Its cache still shows node-1 without those 32 addresses; a new leader
//   that allocated from it gave them to the new nodes.
// Every NNC is read every 100 ms throughout: an address on two NNCs at any
// moment fails the test, not only at the end.
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { dynamicContainers, NNC_PLURAL } from '../../src/nnc/types.ts';
import {
  elected,
  leaderElectFlags,
  leaseHolder,
  startReplica,
  stopReplicas,
  type LeaseTimings,
  type Replica as FulfillerReplica,
} from '../support/fulfiller-process.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { NNC } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

const FAST: LeaseTimings = { lease: 3000, renew: 2000, retry: 500 };

// Request paths are matched as they go over the wire (the proxies see URLs).
interface Replica extends FulfillerReplica {
  /** While true, this replica's proxy cuts every read of an NNC (list, watch, get). */
  blockNncReads: boolean;
  /** Requests this replica's proxy cuts besides (the request never reaches the server). */
  cut: (method: string, path: string) => boolean;
  /** Requests this replica's proxy answers 429 (refused, never applied). */
  throttle: (method: string, path: string) => boolean;
}

/** Addresses held by more than one NNC, with their holders. */
export function duplicates(nncs: NodeNetworkConfig[]): string[] {
  const holders = new Map<string, string[]>();
  for (const o of nncs)
    for (const nc of dynamicContainers(o))
      for (const ip of [nc.primaryIP, ...(nc.ipAssignments ?? []).map((a) => a.ip)])
        if (ip) holders.set(ip, [...(holders.get(ip) ?? []), o.metadata.name]);
  return [...holders]
    .filter(([, h]) => h.length > 1)
    .map(([ip, h]) => `${ip} held by [${h.join(', ')}]`);
}

describe('fulfiller processes: a handover never puts one address on two NNCs', function () {
  this.timeout(90_000);
  let cluster: StrictCluster;
  let server: ApiServer;
  let token: string;
  const replicas: Replica[] = [];
  const seen: string[] = [];
  let watcher: NodeJS.Timeout | undefined;

  const holder = () => leaseHolder(cluster.kc);
  const list = async () =>
    ((await cluster.objects.listNamespacedCustomObject(NNC)) as { items: NodeNetworkConfig[] })
      .items;
  const get = (name: string) => cluster.getNnc(name);
  const setRequest = (name: string, requestedIPCount: number) =>
    cluster.setSpec(name, { requestedIPCount }, { timeoutMs: 20_000 });
  const served = (name: string, n: number, timeoutMs = 20_000) =>
    cluster.nncWithIps(name, n, timeoutMs);

  /** Two replicas; resolves once one holds the lease and the standby has listed: [leader, standby]. */
  async function pair(subnet = '10.240.0.0/24'): Promise<[Replica, Replica]> {
    for (const name of ['replica-a', 'replica-b']) {
      // Its rules first: the proxy asks them of every request.
      const replica = {
        blockNncReads: false,
        cut: () => false,
        throttle: () => false,
      } as unknown as Replica;
      const args = ['--subnet', subnet, ...leaderElectFlags(FAST)];
      Object.assign(
        replica,
        await startReplica(server, token, name, args, ({ method, path }) =>
          (replica.blockNncReads && method === 'GET' && path.includes('/nodenetworkconfigs')) ||
          replica.cut(method, path)
            ? 'drop'
            : replica.throttle(method, path)
              ? 'throttle'
              : 'forward',
        ),
      );
      replicas.push(replica);
    }
    const [leader, standby] = await elected(cluster.kc, replicas);
    const url = await standby.proc.url();
    await waitFor('the standby ready', async () => (await fetch(`${url}/readyz`)).ok, 15_000);
    return [leader, standby];
  }

  beforeEach(async () => {
    cluster = await strictCluster();
    ({ server } = cluster);
    token = await cluster.access.token('fulfiller');
    await cluster.addNode('node-1');
    seen.length = 0;
    // Every NNC, every 100 ms: a duplicate at any moment is remembered.
    watcher = setInterval(() => {
      list().then(
        (items) => seen.push(...duplicates(items).filter((d) => !seen.includes(d))),
        () => {},
      );
    }, 100);
  });

  afterEach(async () => {
    clearInterval(watcher);
    await stopReplicas(replicas);
    await cluster.close();
  });

  it("the review's case: a standby whose NNC watch is down takes the Lease and hands out nothing it cannot see", async () => {
    const [leader, standby] = await pair();
    await served('node-1', 0);
    // The standby's NNC reads fail from now on: its watch is cut and cannot come back.
    standby.blockNncReads = true;
    server.faults.dropWatches(NNC_PLURAL);
    await standby.proc.waitLog('watch restarting', 10_000, (l) => l.watch === 'nnc');
    await setRequest('node-1', 32);
    const grown = await served('node-1', 32);
    expect(dynamicContainers(grown)[0]!.ipAssignments).to.have.length(32);

    leader.proc.child.kill('SIGKILL');
    for (const name of ['node-2', 'node-3', 'node-4']) await cluster.addNode(name);
    await waitFor(
      'the standby holds the lease',
      async () => (await holder())?.startsWith(`${standby.proc.name}_`),
      15_000,
    );
    // The sidecars ask for addresses as soon as their NNCs exist (today's
    // code creates them at once; a fulfiller that waits creates them later).
    const asked = Promise.all(['node-2', 'node-3', 'node-4'].map((n) => setRequest(n, 16)));
    // The new leader leads for a while with its NNC reads still failing.
    await sleep(4000);
    expect(seen, 'addresses on two NNCs while the new leader cannot read NNCs').to.deep.equal([]);
    // It says why it waits: in its log and in /readyz.
    await standby.proc.waitLog('allocations wait', 1000);
    const readyz = await fetch(`${await standby.proc.url()}/readyz`);
    expect(readyz.status).to.equal(503);
    expect(((await readyz.json()) as { waiting?: string }).waiting).to.match(
      /NodeNetworkConfig watch is down|lists the NodeNetworkConfigs/,
    );
    standby.blockNncReads = false;
    await asked;
    for (const name of ['node-2', 'node-3', 'node-4']) await served(name, 16, 40_000);
    await sleep(300);
    expect(seen, 'addresses on two NNCs').to.deep.equal([]);
    expect(duplicates(await list())).to.deep.equal([]);
    expect(dynamicContainers((await get('node-1'))!)[0]!.ipAssignments).to.deep.equal(
      dynamicContainers(grown)[0]!.ipAssignments,
    );
  });

  it("the old leader's last status write, applied by the API server after the handover, puts no address on two NNCs", async () => {
    // A /26: 59 usable addresses, handed out next-fit, so the new leader
    // comes round to the ones the held write puts on node-1.
    const [leader, standby] = await pair('10.240.0.0/26');
    for (const name of ['node-2', 'node-3']) await cluster.addNode(name);
    for (const name of ['node-1', 'node-2', 'node-3']) await served(name, 0);
    // The leader's next status write of node-1 is answered 504 and applied
    // 8 s later (post-timeout activity); after it the leader writes no NNC.
    let held = false;
    leader.cut = (method, path) => {
      if (method === 'GET' || !path.includes('/nodenetworkconfigs')) return false;
      if (held) return true;
      held = path.endsWith('/node-1/status');
      return false;
    };
    server.faults.inject({
      verb: 'update',
      resource: NNC_PLURAL,
      subresource: 'status',
      status: 504,
      afterCommit: true,
      holdMs: 8000,
    });
    // Until the held write is applied, the new leader cannot write node-1:
    // its writes of node-1 are refused (429), so they claim nothing.
    standby.throttle = (method, path) =>
      method !== 'GET' && path.includes('/nodenetworkconfigs/node-1');
    await setRequest('node-1', 16);
    const sent = await waitFor(
      'the held write of node-1',
      () =>
        leader.proxy.requests.find((r) => r.path.endsWith('/node-1/status') && r.status === 504),
      15_000,
    );
    leader.proc.child.kill('SIGKILL');
    // node-2 and node-3 ask for more than is left once node-1 has its 16.
    await setRequest('node-2', 32);
    await setRequest('node-3', 24);
    await waitFor(
      'the standby holds the lease',
      async () => (await holder())?.startsWith(`${standby.proc.name}_`),
      15_000,
    );
    // The held write lands (8 s after it was sent), on node-1's old version.
    const landed = await waitFor(
      'the held write applied',
      async () => {
        const o = await get('node-1');
        const n = dynamicContainers(o ?? { metadata: { name: '' } })[0]?.ipAssignments?.length;
        return n === 16 ? o : undefined;
      },
      20_000,
    );
    expect(Date.now() - sent.sentAt).to.be.at.least(7500);
    standby.throttle = () => false;
    await served('node-2', 32, 40_000);
    await waitFor(
      'node-3 served what is left',
      async () => {
        const o = await get('node-3');
        const n = dynamicContainers(o ?? { metadata: { name: '' } })[0]?.ipAssignments?.length;
        return o?.status?.status === 'SubnetFull' || n === 24;
      },
      40_000,
    );
    await sleep(300);
    expect(seen, 'addresses on two NNCs').to.deep.equal([]);
    expect(duplicates(await list())).to.deep.equal([]);
    expect(dynamicContainers((await get('node-1'))!)[0]!.ipAssignments).to.deep.equal(
      dynamicContainers(landed)[0]!.ipAssignments,
    );
    await standby.proc.waitLog('allocations wait', 1000, (l) =>
      /previous leader/.test(String(l.reason)),
    );
  });
});
