// The node IP store follows the pods, through the real sidecar process
// (bin/pool-monitor sidecar) against the local API server: a store lost on a
// busy node is rebuilt from the pods' status.podIPs before anything is
// handed out.
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  container,
  createNnc,
  createPod,
  spawnSidecar,
  startCluster,
  tempDir,
  waitFor,
  type Cluster,
  type SidecarProcess,
} from './harness.ts';
import { cniRequest, setPodRunning, type IpamAnswer } from './leak-helpers.ts';

const SCALER = {
  batchSize: 10,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

describe('sidecar process: the store follows the pods', function () {
  this.timeout(60_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  const running: SidecarProcess[] = [];

  before(async () => {
    c = await startCluster();
  });
  beforeEach(() => {
    dir = tempDir('sidecar-leaks-');
  });
  afterEach(async () => {
    for (const p of running.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
      await p.exited;
    }
    dir.remove();
  });
  after(async () => {
    await c?.close();
  });

  const start = async (node: string, extra: string[] = []): Promise<string> => {
    const p = spawnSidecar([
      '--node-name',
      node,
      '--kubeconfig',
      c.server.kubeconfigPath,
      '--state-dir',
      dir.path,
      '--listen',
      '127.0.0.1:0',
      ...extra,
    ]);
    running.push(p);
    const url = await Promise.race([
      p.listening,
      p.exited.then(({ code }) => {
        throw new Error(`sidecar exited ${code} before listening: ${p.stderr()}`);
      }),
    ]);
    await waitFor('ready', async () => (await fetch(`${url}/readyz`)).ok, 15_000);
    return url;
  };
  const stop = async (): Promise<void> => {
    const p = running.pop();
    p?.child.kill('SIGTERM');
    expect((await p?.exited)?.code).to.equal(0);
  };

  it('store deleted on a node with 30 running pods: every address adopted, none handed out twice (review defect)', async () => {
    const node = 'busy-node';
    await createNnc(
      c,
      node,
      { requestedIPCount: 40 },
      { scaler: SCALER, networkContainers: [container(Array.from({ length: 40 }, (_, i) => i))] },
    );
    for (let i = 0; i < 30; i++) await createPod(c, `run-${i}`, node);
    let url = await start(node);
    const addresses = new Map<string, string>();
    for (let i = 0; i < 30; i++) {
      const name = `run-${i}`;
      const answer = await cniRequest(url, name);
      expect(answer.ip, `${name}: ${answer.message}`).to.be.a('string');
      addresses.set(name, answer.ip as string);
      await setPodRunning(c, name, answer.ip as string);
    }

    await stop();
    for (const f of ['ipstore.db', 'ipstore.db-wal', 'ipstore.db-shm'])
      rmSync(join(dir.path, f), { force: true });
    url = await start(node);

    // New pods arrive at once: none may get a running pod's address.
    const fresh: IpamAnswer[] = [];
    for (let i = 0; i < 10; i++) {
      await createPod(c, `new-${i}`, node);
      fresh.push(await cniRequest(url, `new-${i}`));
    }
    const taken = new Set(addresses.values());
    const handedOut = fresh.map((a) => a.ip);
    expect(handedOut.filter((ip) => ip !== undefined && taken.has(ip))).to.deep.equal([]);
    expect(new Set(handedOut).size).to.equal(10);

    const res = await fetch(`${url}/debug/ipaddresses`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ IPConfigStateFilter: ['Assigned'] }),
    });
    const listed = (await res.json()) as {
      IPConfigurationStatus: { IPAddress: string; PodInfo: { PodName: string } | null }[];
    };
    const byPod = new Map(
      listed.IPConfigurationStatus.map((s) => [s.PodInfo?.PodName, s.IPAddress]),
    );
    for (const [name, ip] of addresses) expect(byPod.get(name), name).to.equal(ip);
  });
});
