// Crash test: the real sidecar process is killed with SIGKILL at random
// moments while demand changes, a fake control plane makes the NNC status
// follow the spec, and CNI requests are in flight. After every kill the IP
// store (same state dir) is opened and checked, and the NNC spec must be
// consistent; at the end a last sidecar must converge.
//
// CRASH_CYCLES (default 50) and CRASH_SEED make longer or repeatable runs.
import { expect } from 'chai';
import { checkStoreInvariants, openIpStore } from '../../src/ipstore/index.ts';
import type { NodeIpStore } from '../../src/ipstore/types.ts';
import {
  container,
  createNnc,
  createPod,
  deletePod,
  fulfil,
  getNnc,
  sleep,
  spawnSidecar,
  startCluster,
  tempDir,
  waitFor,
  type Cluster,
} from './harness.ts';
import { seededRandom as prng } from '../../src/sim/random.ts';

const CYCLES = Number(process.env.CRASH_CYCLES ?? 50);
const SEED = Number(process.env.CRASH_SEED ?? 20261122);
const SCALER = {
  batchSize: 5,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 60,
};
const IFACES = 16;

/** What the test knows of each pod interface: its IP (acknowledged), none, or unknown (in flight at the kill). */
type Known = Map<string, string | null | 'unknown'>;

describe('sidecar crash test (kill -9 during scale cycles with CNI traffic)', function () {
  this.timeout(60_000 + CYCLES * 3000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  const node = 'crash-node';

  before(async () => {
    c = await startCluster();
    dir = tempDir('sidecar-crash-');
  });
  after(async () => {
    await c?.close();
    dir?.remove();
  });

  it(`keeps the store and the NNC spec consistent over ${CYCLES} kill -9 cycles`, async () => {
    const random = prng(SEED);
    const pick = (n: number): number => Math.floor(random() * n);
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: SCALER, networkContainers: [container(Array.from({ length: 10 }, (_, i) => i))] },
    );
    // Every IP id the status ever held: ipsNotInUse may only name these.
    const everBacked = new Set<string>();
    const remember = async (): Promise<void> => {
      const nnc = await getNnc(c, node);
      for (const a of nnc.status?.networkContainers?.[0]?.ipAssignments ?? [])
        everBacked.add(a.name);
    };
    await remember();

    // The fake control plane: the status follows the spec every 40 ms.
    let fulfilling = true;
    const fulfiller = (async () => {
      while (fulfilling) {
        try {
          await fulfil(c, node, SCALER);
          await remember();
        } catch {
          // 409 against a concurrent write: next round
        }
        await sleep(40);
      }
    })();

    try {
      const pods = new Set<string>();
      let podSeq = 0;
      const known: Known = new Map();
      const problems: string[] = [];
      const check = (
        store: NodeIpStore,
        cycle: number,
        spec: { requestedIPCount?: number; ipsNotInUse?: string[] } | undefined,
      ): void => {
        const where = `cycle ${cycle} (seed ${SEED})`;
        for (const p of checkStoreInvariants(store)) problems.push(`${where}: ${p}`);
        const records = new Map(store.list().map((r) => [r.id, r]));
        const request = spec?.requestedIPCount ?? 0;
        if (!Number.isInteger(request) || request < 0 || request > SCALER.maxIPCount)
          problems.push(`${where}: requestedIPCount ${request} is not sane`);
        for (const id of spec?.ipsNotInUse ?? []) {
          if (!everBacked.has(id))
            problems.push(`${where}: ipsNotInUse names ${id}, never in status`);
          const r = records.get(id);
          if (r !== undefined && r.state !== 'PendingRelease')
            problems.push(`${where}: ipsNotInUse names ${id}, which the store has ${r.state}`);
        }
        const byIface = new Map(
          store.list(['Assigned']).map((r) => [r.pod?.podInterfaceID ?? '', r.ip]),
        );
        for (const [iface, ip] of known) {
          const now = byIface.get(iface) ?? null;
          if (ip !== 'unknown' && ip !== now)
            problems.push(
              `${where}: ${iface} was acknowledged ${ip ?? 'released'}, store has ${now ?? 'nothing'}`,
            );
          known.set(iface, now);
        }
      };

      for (let cycle = 0; cycle < CYCLES; cycle++) {
        // Demand moves between cycles, so the pool scales up and down.
        const change = pick(9) - 4;
        for (let i = 0; i < Math.abs(change); i++) {
          if (change > 0 && pods.size < 30) {
            const name = `cp-${podSeq++}`;
            pods.add(name);
            await createPod(c, name, node);
          } else if (change < 0 && pods.size > 0) {
            const name = [...pods][pick(pods.size)] as string;
            pods.delete(name);
            await deletePod(c, name);
          }
        }
        const p = spawnSidecar([
          '--node-name',
          node,
          '--kubeconfig',
          c.server.kubeconfigPath,
          '--state-dir',
          dir.path,
          '--listen',
          '127.0.0.1:0',
          '--log-level',
          'info',
        ]);
        const url = await Promise.race([
          p.listening,
          p.exited.then(({ code }) => {
            throw new Error(`sidecar exited ${code} before listening: ${p.stderr()}`);
          }),
        ]);
        // CNI traffic until the kill; whatever is in flight then is "unknown".
        let alive = true;
        const traffic = (async () => {
          while (alive) {
            const k = `iface-${pick(IFACES)}`;
            const assign = random() < 0.6;
            const body = JSON.stringify({
              podInterfaceID: k,
              infraContainerID: `infra-${k}`,
              orchestratorContext: { PodName: k, PodNamespace: 'default' },
              desiredIPAddresses: [],
            });
            const before = known.get(k) ?? null;
            known.set(k, 'unknown');
            try {
              const res = await fetch(`${url}/network/${assign ? 'request' : 'release'}ipconfigs`, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json' },
                body,
              });
              const json = (await res.json()) as {
                response: { ReturnCode: number };
                podIPInfo?: { PodIPConfig: { IPAddress: string } }[];
              };
              if (json.response.ReturnCode === 0)
                known.set(
                  k,
                  assign ? (json.podIPInfo?.[0]?.PodIPConfig.IPAddress ?? 'unknown') : null,
                );
              else known.set(k, before === 'unknown' ? 'unknown' : before); // refused: unchanged
            } catch {
              return; // killed mid-request: stays unknown
            }
            await sleep(pick(15));
          }
        })();
        await sleep(pick(350));
        p.child.kill('SIGKILL');
        alive = false;
        const { signal } = await p.exited;
        expect(signal).to.equal('SIGKILL');
        await traffic;
        const spec = (await getNnc(c, node)).spec;
        const store = openIpStore({ stateDir: dir.path });
        try {
          check(store, cycle, spec);
        } finally {
          store.close();
        }
        if (problems.length > 0) break;
      }
      expect(problems).to.deep.equal([]);

      // Finally a sidecar that lives: the pool converges and everything agrees.
      const last = spawnSidecar([
        '--node-name',
        node,
        '--kubeconfig',
        c.server.kubeconfigPath,
        '--state-dir',
        dir.path,
        '--listen',
        '127.0.0.1:0',
        '--log-level',
        'info',
      ]);
      const url = await last.listening;
      // The CNI traffic had no pods behind it: release it, so demand is the pods alone.
      for (let i = 0; i < IFACES; i++) {
        const res = await fetch(`${url}/network/releaseipconfigs`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({
            podInterfaceID: `iface-${i}`,
            infraContainerID: `infra-iface-${i}`,
            orchestratorContext: { PodName: `iface-${i}`, PodNamespace: 'default' },
            desiredIPAddresses: [],
          }),
        });
        expect(res.status).to.equal(200);
      }
      const demand = pods.size;
      const target = Math.min(SCALER.maxIPCount, 5 * Math.ceil(0.5 + demand / 5));
      let lastSeen = '';
      await waitFor(
        `converged to ${target} with ipsNotInUse cleared`,
        async () => {
          const nnc = await getNnc(c, node);
          const status = (nnc.status?.networkContainers?.[0]?.ipAssignments ?? []).length;
          const pool = (await (await fetch(`${url}/debug/pool`)).json()) as { demand: number };
          lastSeen = JSON.stringify({ spec: nnc.spec, status, pool });
          return (
            pool.demand === demand &&
            nnc.spec?.requestedIPCount === target &&
            (nnc.spec?.ipsNotInUse ?? []).length === 0 &&
            status === target
          );
        },
        15_000,
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; last seen ${lastSeen}`);
      });
      const ids = (await (
        await fetch(`${url}/debug/ipaddresses`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ IPConfigStateFilter: ['PendingRelease'] }),
        })
      ).json()) as { IPConfigurationStatus: unknown[] };
      expect(ids.IPConfigurationStatus).to.have.length(0);
      last.child.kill('SIGTERM');
      expect((await last.exited).code).to.equal(0);
    } finally {
      fulfilling = false;
      await fulfiller;
    }
    const nnc = await getNnc(c, node);
    const store = openIpStore({ stateDir: dir.path });
    try {
      expect(
        checkStoreInvariants(store, { backing: nnc.status?.networkContainers ?? [] }),
      ).to.deep.equal([]);
    } finally {
      store.close();
    }
  });
});
