// Crash test of the fulfiller (docs/design/fulfiller.md, "the ledger"): the
// real `bin/pool-monitor fulfiller` process is killed with SIGKILL while it
// allocates and while its status writes are on the wire, over and over; it
// keeps nothing of its own, so each new process starts from the NNC
// statuses alone. Between cycles the nodes' "sidecars" (this test) move their
// requests up and down and give IPs back through spec.ipsNotInUse. Three
// kinds of kill, in turn:
//   - at a random moment while there is work to do (allocation under way);
//   - the moment a status write reaches the API server, which still applies
//     it (the write lands, its answer is lost);
//   - the moment a status write is sent, which never reaches the server.
// After every kill: no address in two NNCs, every status one the fulfiller
// may write, and no address left an NNC unless the node gave it back. At the
// end a fulfiller that lives fills every node to its request.
//
// CRASH_FULFILLER_CYCLES (default 12) and CRASH_SEED make longer or
// repeatable runs (`make crash-long`: 200).
import { PatchStrategy, setHeaderOptions, type CustomObjectsApi } from '@kubernetes/client-node';
import { expect } from 'chai';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { seededRandom } from '../../src/sim/random.ts';
import { statusProblems } from '../fuzz/checks.ts';
import { spawnFulfiller, type FulfillerProcess } from '../support/fulfiller-process.ts';
import { startRecordingProxy, type RecordingProxy } from '../support/recording-proxy.ts';
import { NNC, startTestCluster, type TestCluster } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

const CYCLES = Number(process.env.CRASH_FULFILLER_CYCLES ?? 12);
const SEED = Number(process.env.CRASH_SEED ?? 20261125);
const NODES = ['crash-a', 'crash-b', 'crash-c', 'crash-d'];
const PREFIX = '10.240.0.';
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
type Kill = 'random' | 'write-lands' | 'write-lost';

function assignmentsOf(nnc: NodeNetworkConfig | undefined): { name: string; ip: string }[] {
  return (nnc?.status?.networkContainers ?? []).flatMap((nc) =>
    (nc.assignmentMode ?? 'dynamic') === 'dynamic' ? (nc.ipAssignments ?? []) : [],
  );
}

describe('fulfiller crash test (kill -9 during allocation and status writes)', function () {
  this.timeout(60_000 + CYCLES * 8000);
  let cluster: TestCluster;
  let objects: CustomObjectsApi;
  let proxy: RecordingProxy;
  let proc: FulfillerProcess | undefined;
  /** What the proxy does with the next status write. */
  let onStatusWrite: Kill | undefined;
  /** Set when the proxy killed the process at a status write. */
  let killedAtWrite = false;

  before(async () => {
    // No RBAC: the fulfiller is the admin, through the proxy that kills it.
    cluster = await startTestCluster({ pooled: false });
    const { server } = cluster;
    objects = cluster.objects;
    for (const name of NODES) await cluster.addNode(name);
    proxy = await startRecordingProxy(server, server.adminToken, ({ method, path }) => {
      if (method !== 'PUT' || !path.endsWith('/status') || !onStatusWrite || !proc)
        return 'forward';
      const kill = onStatusWrite;
      onStatusWrite = undefined;
      killedAtWrite = true;
      proc.child.kill('SIGKILL');
      return kill === 'write-lost' ? 'drop' : 'forward';
    });
  });
  after(async () => {
    proc?.child.kill('SIGKILL');
    await proxy?.close();
    await cluster?.close();
  });

  const nncs = async (): Promise<Map<string, NodeNetworkConfig>> => {
    const list = (await objects.listNamespacedCustomObject(NNC)) as { items: NodeNetworkConfig[] };
    return new Map(list.items.map((n) => [n.metadata.name, n]));
  };
  const start = (): FulfillerProcess =>
    spawnFulfiller('crash-fulfiller', [
      '--kubeconfig',
      proxy.kubeconfigPath,
      '--subnet',
      '10.240.0.0/24',
      '--batch',
      '4',
      '--leader-elect',
      'false',
    ]);

  it(`keeps every address on one NNC and nothing lost over ${CYCLES} kill -9 cycles`, async () => {
    const random = seededRandom(SEED);
    const pick = (n: number): number => Math.floor(random() * n);
    const problems: string[] = [];
    const counts: Record<Kill | 'no-write-came', number> = {
      random: 0,
      'write-lands': 0,
      'write-lost': 0,
      'no-write-came': 0,
    };
    // What each NNC held at the last check, and the ids its spec gave back since.
    let held = new Map<string, Map<string, string>>();
    const givenBack = new Map<string, Set<string>>(NODES.map((n) => [n, new Set<string>()]));

    const check = async (where: string): Promise<void> => {
      const now = await nncs();
      const owner = new Map<string, string>();
      for (const [name, nnc] of now) {
        for (const p of statusProblems(nnc.status ?? { networkContainers: [] }, PREFIX))
          if (nnc.status) problems.push(`${where}: ${name}: ${p}`);
        for (const nc of nnc.status?.networkContainers ?? []) {
          for (const ip of [nc.primaryIP, ...(nc.ipAssignments ?? []).map((a) => a.ip)]) {
            if (!ip) continue;
            const other = owner.get(ip);
            if (other && other !== name) problems.push(`${where}: ${ip} in ${other} and ${name}`);
            owner.set(ip, name);
          }
        }
        const before = held.get(name) ?? new Map<string, string>();
        const after = new Map(assignmentsOf(nnc).map((a) => [a.name, a.ip]));
        for (const [id, ip] of before)
          if (after.get(id) !== ip && !givenBack.get(name)?.has(id))
            problems.push(`${where}: ${name} lost ${id} ${ip}, which it never gave back`);
      }
      held = new Map(
        [...now].map(([name, nnc]) => [
          name,
          new Map(assignmentsOf(nnc).map((a) => [a.name, a.ip])),
        ]),
      );
    };

    const setSpec = async (name: string, requestedIPCount: number, ipsNotInUse: string[]) => {
      await objects.patchNamespacedCustomObject(
        { ...NNC, name, body: { spec: { requestedIPCount, ipsNotInUse } } },
        MERGE,
      );
    };
    /** The "sidecars": a new request per node, giving some IPs back. */
    const moveDemand = async (): Promise<void> => {
      for (const [name, nnc] of await nncs()) {
        const ips = assignmentsOf(nnc);
        const request = pick(41);
        const surplus = Math.max(0, ips.length - request);
        const back = ips.slice(0, surplus).map((a) => a.name);
        for (const id of back) givenBack.get(name)?.add(id);
        await setSpec(name, request, back);
      }
    };

    for (let cycle = 0; cycle < CYCLES && problems.length === 0; cycle += 1) {
      if (cycle > 0) await moveDemand();
      const kill: Kill = (['random', 'write-lands', 'write-lost'] as const)[cycle % 3]!;
      proc = start();
      await proc.url();
      if (cycle === 0) {
        await waitFor(
          'every NNC created',
          async () => (await nncs()).size === NODES.length,
          15_000,
        );
        await moveDemand();
      }
      if (kill === 'random') {
        await sleep(50 + pick(600));
        proc.child.kill('SIGKILL');
      } else {
        killedAtWrite = false;
        onStatusWrite = kill;
        // Killed at the next status write; if there is none within 3 s, at once.
        await Promise.race([proc.exited, sleep(3000)]);
        onStatusWrite = undefined;
        proc.child.kill('SIGKILL');
      }
      const how = await proc.exited;
      expect(how, proc.output().slice(-1500)).to.equal('SIGKILL');
      counts[kill === 'random' || killedAtWrite ? kill : 'no-write-came'] += 1;
      await check(`cycle ${cycle} (${kill}, seed ${SEED})`);
    }
    expect(problems.slice(0, 10)).to.deep.equal([]);

    // A fulfiller that lives fills every node to its request, from the statuses alone.
    onStatusWrite = undefined;
    proc = start();
    await proc.url();
    const want = new Map<string, number>();
    for (const [name, nnc] of await nncs()) {
      const request = pick(41);
      const ips = assignmentsOf(nnc);
      const back = ips.slice(0, Math.max(0, ips.length - request)).map((a) => a.name);
      for (const id of back) givenBack.get(name)?.add(id);
      await setSpec(name, request, back);
      want.set(name, request);
    }
    await waitFor(
      'every node at its request',
      async () => {
        const now = await nncs();
        return [...want].every(([name, n]) => assignmentsOf(now.get(name)).length === n);
      },
      20_000,
    );
    await check('converged');
    expect(problems).to.deep.equal([]);
    proc.child.kill('SIGTERM');
    expect(await proc.exited).to.equal(0);
    console.log(`      kills: ${JSON.stringify(counts)}`);
  });
});
